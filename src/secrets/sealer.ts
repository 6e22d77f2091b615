import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** A sealed value as stored in the log: AES-256-GCM over the JSON of the clear value. */
export interface Sealed {
  readonly $sealed: string;
}

export const isSealed = (value: unknown): value is Sealed =>
  typeof value === "object" && value !== null && typeof (value as { $sealed?: unknown }).$sealed === "string";

/** Encrypts secret prop values at rest; the key never enters the log. */
export class Sealer {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("the secret key must be 32 bytes");
  }

  seal(value: unknown): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
    return { $sealed: `v1.${iv.toString("base64url")}.${body.toString("base64url")}.${cipher.getAuthTag().toString("base64url")}` };
  }

  open(sealed: Sealed): unknown {
    const [version, iv, body, tag] = sealed.$sealed.split(".");
    if (version !== "v1" || !iv || body === undefined || !tag) throw new Error("unrecognized sealed value");
    let clear: Buffer;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      clear = Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]);
    } catch {
      throw new Error(
        "a secret value could not be opened with this node's key (was HEADWATER_SECRET_KEY changed, or does this node not share it?)",
      );
    }
    return JSON.parse(clear.toString("utf8"));
  }

  /** A key for another purpose (HKDF-SHA256 of this one): shared by every node that shares the secret key, never the key itself. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync("sha256", this.key, Buffer.alloc(0), `headwater:${purpose}`, 32));
  }
}

/**
 * HEADWATER_SECRET_KEY (64 hex digits or base64 of 32 bytes) when set — every node sharing a log
 * needs the same one; otherwise a key generated once into <data dir>/secret.key (mode 0600).
 */
export function loadSealer(configured: string | undefined, dataDir: string): Sealer {
  if (configured) {
    const key = /^[0-9a-f]{64}$/i.test(configured) ? Buffer.from(configured, "hex") : Buffer.from(configured, "base64");
    if (key.length !== 32) throw new Error("HEADWATER_SECRET_KEY must be 32 bytes: 64 hex digits or base64");
    return new Sealer(key);
  }
  const file = path.join(dataDir, "secret.key");
  try {
    return new Sealer(Buffer.from(fs.readFileSync(file, "utf8").trim(), "base64"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    fs.writeFileSync(file, key.toString("base64"), { mode: 0o600, flag: "wx" });
    return new Sealer(key);
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return new Sealer(Buffer.from(fs.readFileSync(file, "utf8").trim(), "base64"));
  }
}
