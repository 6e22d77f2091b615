// Node's createECDH: elliptic-curve Diffie-Hellman on raw keys, run on the host
// (sandbox/hostKeys.ts) without state kept there. This object holds its private key and its
// uncompressed public key, out of reach of its user but through Node's getters, and hands the
// private key over for each computeSecret.
import { Buffer } from "buffer";
import { hostSync } from "../bridge.js";
import { invalidType, isBinary, nodeError, toBytes } from "./cryptoArgs.js";

type Encoded = Buffer | string;

function encoded(bytes: Uint8Array, encoding: unknown): Encoded {
  const buf = Buffer.from(bytes);
  return typeof encoding === "string" && encoding !== "buffer" ? buf.toString(encoding as BufferEncoding) : buf;
}

/** A key given as a string in `encoding` or as binary data. */
function keyBytes(key: unknown, name: string, encoding: unknown): Uint8Array {
  if (typeof key !== "string" && !isBinary(key))
    throw invalidType(name, "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", key);
  return Uint8Array.from(toBytes(key, typeof encoding === "string" ? encoding : undefined));
}

function checkFormat(format: unknown): string | undefined {
  if (format === undefined || format === "uncompressed" || format === "compressed" || format === "hybrid") return format;
  throw nodeError(new TypeError(`Invalid ECDH format: ${String(format)}`), "ERR_CRYPTO_ECDH_INVALID_FORMAT");
}

/** A point in another format (compressed, hybrid): the host converts it. */
function converted(key: Uint8Array, curve: string, format: string | undefined): Uint8Array {
  if (format === undefined || format === "uncompressed") return key;
  return hostSync<Uint8Array>("crypto.ecdh", { action: "convert", curve, key, format });
}

export class ECDH {
  readonly #curve: string;
  #privateKey: Uint8Array | undefined;
  #publicKey: Uint8Array | undefined;

  constructor(curve: unknown) {
    if (typeof curve !== "string") throw invalidType("curve", "of type string", curve);
    // Node fails at once on a curve it does not know.
    hostSync("crypto.ecdh", { action: "check", curve });
    this.#curve = curve;
  }

  /** ECDH.convertKey(key, curve[, inputEncoding[, outputEncoding[, format]]]). */
  static convertKey(key: unknown, curve: unknown, inputEncoding?: unknown, outputEncoding?: unknown, format?: unknown): Encoded {
    if (typeof curve !== "string") throw invalidType("curve", "of type string", curve);
    const bytes = keyBytes(key, "key", inputEncoding);
    const to = checkFormat(format) ?? "uncompressed";
    return encoded(hostSync<Uint8Array>("crypto.ecdh", { action: "convert", curve, key: bytes, format: to }), outputEncoding);
  }

  generateKeys(encoding?: unknown, format?: unknown): Encoded {
    const pair = hostSync<{ privateKey: Uint8Array; publicKey: Uint8Array }>("crypto.ecdh", { action: "generate", curve: this.#curve });
    this.#privateKey = pair.privateKey;
    this.#publicKey = pair.publicKey;
    return this.getPublicKey(encoding, format);
  }

  computeSecret(otherPublicKey: unknown, inputEncoding?: unknown, outputEncoding?: unknown): Encoded {
    const other = keyBytes(otherPublicKey, "otherPublicKey", inputEncoding);
    if (this.#privateKey === undefined) throw nodeError(new RangeError("Invalid key pair"), "ERR_CRYPTO_INVALID_KEYPAIR");
    const secret = hostSync<Uint8Array>("crypto.ecdh", { action: "compute", curve: this.#curve, privateKey: this.#privateKey, key: other });
    return encoded(secret, outputEncoding);
  }

  getPrivateKey(encoding?: unknown): Encoded {
    if (this.#privateKey === undefined) throw nodeError(new Error("Failed to get ECDH private key"), "ERR_CRYPTO_OPERATION_FAILED");
    return encoded(this.#privateKey, encoding);
  }

  getPublicKey(encoding?: unknown, format?: unknown): Encoded {
    const to = checkFormat(format);
    if (this.#publicKey === undefined) throw nodeError(new Error("Failed to get ECDH public key"), "ERR_CRYPTO_OPERATION_FAILED");
    return encoded(converted(this.#publicKey, this.#curve, to), encoding);
  }

  setPrivateKey(privateKey: unknown, encoding?: unknown): this {
    const key = keyBytes(privateKey, "key", encoding);
    const pair = hostSync<{ privateKey: Uint8Array; publicKey: Uint8Array }>("crypto.ecdh", {
      action: "setPrivate",
      curve: this.#curve,
      privateKey: key,
    });
    this.#privateKey = pair.privateKey;
    this.#publicKey = pair.publicKey;
    return this;
  }

  /** Deprecated in Node, kept for code that calls it: the public key as given, unchecked until used. */
  setPublicKey(publicKey: unknown, encoding?: unknown): this {
    this.#publicKey = keyBytes(publicKey, "key", encoding);
    return this;
  }
}

export function createECDH(curve: unknown): ECDH {
  return new ECDH(curve);
}

let curveNames: readonly string[] | undefined;

export function getCurves(): string[] {
  curveNames ??= Object.freeze(hostSync<string[]>("crypto.ecdh", { action: "curves" }));
  return [...curveNames];
}
