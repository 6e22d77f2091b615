// Synchronous operations the isolate may ask of its runner process: URL parsing, hashing,
// asymmetric keys and signatures (hostKeys.ts), ciphers (hostCiphers.ts), key derivation
// (hostDerive.ts), and crypto.subtle's ciphers, key derivation and key generation
// (hostSubtle.ts). Every argument comes from untrusted code, so each is checked before use.
import crypto from "node:crypto";
import { cipherOperation } from "./hostCiphers.js";
import { deriveOperation } from "./hostDerive.js";
import { keyOperation } from "./hostKeys.js";
import { subtleOperation } from "./hostSubtle.js";

export type SyncReply = { ok: true; value: unknown } | { ok: false; error: string; name?: string; code?: string };

const HASHES = new Set(crypto.getHashes().map((h) => h.toLowerCase()));
const MAX_DIGEST_INPUT = 64 * 1024 * 1024;

function urlParts(u: URL) {
  return {
    href: u.href,
    origin: u.origin,
    protocol: u.protocol,
    username: u.username,
    password: u.password,
    host: u.host,
    hostname: u.hostname,
    port: u.port,
    pathname: u.pathname,
    search: u.search,
    hash: u.hash,
  };
}

const URL_PARTS = new Set(["protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"]);

function str(v: unknown, max = 1024 * 1024): string {
  if (typeof v !== "string") throw new TypeError("expected a string");
  if (v.length > max) throw new RangeError("string too long");
  return v;
}

function bytes(v: unknown): Uint8Array {
  if (!(v instanceof Uint8Array)) throw new TypeError("expected bytes");
  if (v.byteLength > MAX_DIGEST_INPUT) throw new RangeError("input too large");
  return v;
}

function algorithm(v: unknown): string {
  const name = str(v, 64);
  if (!HASHES.has(name.toLowerCase())) throw new Error(`Digest method not supported: ${name}`);
  return name;
}

export function hostOperation(op: unknown, args: unknown): SyncReply {
  try {
    const a = (typeof args === "object" && args !== null ? args : {}) as Record<string, unknown>;
    switch (op) {
      case "url.parse": {
        let u: URL;
        try {
          u = a["base"] === undefined ? new URL(str(a["input"])) : new URL(str(a["input"]), str(a["base"]));
        } catch {
          return { ok: false, name: "TypeError", error: `Invalid URL: ${String(a["input"]).slice(0, 200)}` };
        }
        return { ok: true, value: urlParts(u) };
      }
      case "url.set": {
        const part = str(a["part"], 16);
        if (!URL_PARTS.has(part)) throw new TypeError(`unknown URL part ${part}`);
        const u = new URL(str(a["href"]));
        (u as unknown as Record<string, string>)[part] = str(a["value"]);
        return { ok: true, value: urlParts(u) };
      }
      case "crypto.check":
        algorithm(a["algorithm"]);
        return { ok: true, value: true };
      case "crypto.digest": {
        const alg = algorithm(a["algorithm"]);
        const data = bytes(a["data"]);
        const digest =
          a["key"] === undefined || a["key"] === null
            ? crypto.createHash(alg).update(data).digest()
            : crypto.createHmac(alg, bytes(a["key"])).update(data).digest();
        return { ok: true, value: new Uint8Array(digest) };
      }
      case "crypto.randomBytes": {
        const size = a["size"];
        if (!Number.isInteger(size) || (size as number) < 0 || (size as number) > 65536) throw new RangeError("size must be 0..65536");
        return { ok: true, value: new Uint8Array(crypto.randomBytes(size as number)) };
      }
      case "crypto.hashes":
        return { ok: true, value: [...HASHES] };
      default: {
        const done =
          typeof op === "string"
            ? (keyOperation(op, a) ?? cipherOperation(op, a) ?? deriveOperation(op, a) ?? subtleOperation(op, a))
            : undefined;
        if (done !== undefined) return { ok: true, value: done.value };
        return { ok: false, error: `unknown host operation ${String(op)}` };
      }
    }
  } catch (err) {
    // Only the message, the class name and Node's error code cross: never the host's error object.
    const e = err as Error & { code?: unknown };
    const code = typeof e.code === "string" && /^ERR_[A-Z0-9_]{1,80}$/.test(e.code) ? e.code : undefined;
    const name = e.name === "TypeError" || e.name === "RangeError" ? e.name : "Error";
    return { ok: false, error: String(e.message).slice(0, 1000), name, ...(code === undefined ? {} : { code }) };
  }
}
