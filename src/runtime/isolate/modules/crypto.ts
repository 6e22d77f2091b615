// The crypto subset: hashes, HMAC, random bytes, randomUUID, timingSafeEqual. Digests run on the
// host (node:crypto) through one synchronous bridge call per digest.
import { Buffer } from "buffer";
import { hostSync } from "../bridge.js";

type Data = string | Uint8Array | ArrayBuffer | DataView;

function toBytes(data: Data, encoding?: string): Uint8Array {
  if (typeof data === "string") return Buffer.from(data, (encoding ?? "utf8") as BufferEncoding);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView');
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const total = chunks.reduce((n, c) => n + c.byteLength, 0);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

function encodeDigest(bytes: Uint8Array, encoding?: string): string | Buffer {
  const buf = Buffer.from(bytes);
  return encoding === undefined || encoding === "buffer" ? buf : buf.toString(encoding as BufferEncoding);
}

class Digest {
  #chunks: Uint8Array[] = [];
  #done = false;
  constructor(
    readonly algorithm: string,
    readonly key: Uint8Array | undefined,
  ) {
    // Fails fast on an unknown algorithm, as Node does.
    hostSync("crypto.check", { algorithm });
  }
  update(data: Data, encoding?: string): this {
    if (this.#done) throw new Error("Digest already called");
    this.#chunks.push(Uint8Array.from(toBytes(data, encoding)));
    return this;
  }
  digest(encoding?: string): string | Buffer {
    if (this.#done) throw new Error("Digest already called");
    this.#done = true;
    const bytes = hostSync<Uint8Array>("crypto.digest", { algorithm: this.algorithm, key: this.key, data: concat(this.#chunks) });
    return encodeDigest(bytes, encoding);
  }
  copy(): Digest {
    const next = new (this.constructor as new (a: string, k: Uint8Array | undefined) => Digest)(this.algorithm, this.key);
    next.#chunks = [...this.#chunks];
    return next;
  }
}

export class Hash extends Digest {}
export class Hmac extends Digest {}

export function createHash(algorithm: string): Hash {
  return new Hash(String(algorithm), undefined);
}

export function createHmac(algorithm: string, key: Data): Hmac {
  return new Hmac(String(algorithm), Uint8Array.from(toBytes(key)));
}

export function hash(algorithm: string, data: Data, encoding = "hex"): string | Buffer {
  return createHash(algorithm).update(data).digest(encoding);
}

export function randomBytes(size: number, callback?: (err: Error | null, buf: Buffer) => void): Buffer {
  if (!Number.isInteger(size) || size < 0 || size > 65536) throw new RangeError('The "size" argument must be an integer from 0 to 65536');
  const buf = Buffer.from(hostSync<Uint8Array>("crypto.randomBytes", { size }));
  if (callback) void Promise.resolve().then(() => callback(null, buf));
  return buf;
}

export function getRandomValues<T extends ArrayBufferView>(array: T): T {
  if (!ArrayBuffer.isView(array)) throw new TypeError("getRandomValues expects an integer TypedArray");
  if (array.byteLength > 65536) throw new RangeError("getRandomValues: at most 65536 bytes");
  const bytes = hostSync<Uint8Array>("crypto.randomBytes", { size: array.byteLength });
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(bytes);
  return array;
}

export function randomUUID(): string {
  const b = getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function randomInt(min: number, max?: number): number {
  if (max === undefined) [min, max] = [0, min];
  const range = max - min;
  if (!Number.isSafeInteger(range) || range <= 0) throw new RangeError("randomInt: max must be greater than min");
  const bytes = getRandomValues(new Uint32Array(2));
  const r = (bytes[0] * 2 ** 32 + bytes[1]) / 2 ** 64;
  return min + Math.floor(r * range);
}

export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) throw new RangeError("Input buffers must have the same byte length");
  let diff = 0;
  for (let i = 0; i < a.byteLength; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

export function getHashes(): string[] {
  return hostSync<string[]>("crypto.hashes", {});
}

function unavailable(name: string) {
  return () => {
    throw new Error(`crypto.${name} is not available in the Headwater sandbox (hashes, HMAC and random values are)`);
  };
}

export const createCipheriv = unavailable("createCipheriv");
export const createDecipheriv = unavailable("createDecipheriv");
export const createSign = unavailable("createSign");
export const createVerify = unavailable("createVerify");
export const generateKeyPairSync = unavailable("generateKeyPairSync");
export const pbkdf2Sync = unavailable("pbkdf2Sync");
export const scryptSync = unavailable("scryptSync");

export const webcrypto = { getRandomValues, randomUUID };

export default {
  createHash,
  createHmac,
  hash,
  randomBytes,
  randomUUID,
  randomInt,
  getRandomValues,
  timingSafeEqual,
  getHashes,
  createCipheriv,
  createDecipheriv,
  createSign,
  createVerify,
  generateKeyPairSync,
  pbkdf2Sync,
  scryptSync,
  webcrypto,
  Hash,
  Hmac,
};
