// The crypto subset: hashes, HMAC, random bytes, randomUUID, timingSafeEqual, and secret
// KeyObjects (createSecretKey; createHmac takes one, as jsonwebtoken 9 and jwa pass it). Digests
// run on the host (node:crypto) through one synchronous bridge call per digest. Asymmetric keys
// (createPrivateKey, createPublicKey) and signatures are not available.
import { Buffer } from "buffer";
import { hostSync } from "../bridge.js";
import { concatBytes } from "../textCodec.js";

type Data = string | Uint8Array | ArrayBuffer | DataView;

function toBytes(data: Data, encoding?: string): Uint8Array {
  if (typeof data === "string") return Buffer.from(data, (encoding ?? "utf8") as BufferEncoding);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView');
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
    const bytes = hostSync<Uint8Array>("crypto.digest", { algorithm: this.algorithm, key: this.key, data: concatBytes(this.#chunks) });
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

function nodeError<E extends Error>(err: E, code: string): E & { code: string } {
  return Object.assign(err, { code });
}

function describeReceived(value: unknown): string {
  if (value === null || value === undefined) return ` Received ${String(value)}`;
  if (typeof value === "object" || typeof value === "function") {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === "string" && name !== "" ? ` Received an instance of ${name}` : " Received an object";
  }
  return ` Received type ${typeof value} (${String(value).slice(0, 25)})`;
}

const isBinary = (v: unknown): v is Uint8Array | ArrayBuffer | DataView => v instanceof ArrayBuffer || ArrayBuffer.isView(v);

// The bytes of each secret KeyObject, out of reach of the object itself (no field to read or overwrite).
const secretBytes = new WeakMap<KeyObject, Uint8Array>();
// Only this module makes the handle a KeyObject is built from, as only Node's internals make one.
class SecretKeyHandle {
  constructor(readonly bytes: Uint8Array) {}
}

/** Node's KeyObject; only secret (symmetric) keys exist in the sandbox. */
export class KeyObject {
  readonly #type: "secret";
  constructor(type: string, handle: unknown) {
    if (type !== "secret")
      throw nodeError(new TypeError(`The argument 'type' is invalid. Received '${String(type)}'`), "ERR_INVALID_ARG_VALUE");
    if (!(handle instanceof SecretKeyHandle))
      throw nodeError(new TypeError(`The "handle" argument must be of type object.${describeReceived(handle)}`), "ERR_INVALID_ARG_TYPE");
    this.#type = type;
    secretBytes.set(this, handle.bytes);
  }
  static from(key: unknown): KeyObject {
    // There is no CryptoKey (no crypto.subtle) in the sandbox to convert.
    throw nodeError(new TypeError(`The "key" argument must be an instance of CryptoKey.${describeReceived(key)}`), "ERR_INVALID_ARG_TYPE");
  }
  get type(): "secret" {
    return this.#type;
  }
  get symmetricKeySize(): number | undefined {
    return secretBytes.get(this)?.byteLength;
  }
  get asymmetricKeyType(): undefined {
    return undefined;
  }
  get asymmetricKeyDetails(): undefined {
    return undefined;
  }
  export(options?: { format?: string }): Buffer | { kty: "oct"; k: string } {
    if (options !== undefined && (options === null || typeof options !== "object"))
      throw nodeError(new TypeError(`The "options" argument must be of type object.${describeReceived(options)}`), "ERR_INVALID_ARG_TYPE");
    const bytes = secretKeyBytes(this);
    const format = options?.format;
    // base64url by hand: the sandbox's Buffer knows only base64.
    if (format === "jwk")
      return { kty: "oct", k: Buffer.from(bytes).toString("base64").replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_") };
    if (format !== undefined && format !== "buffer")
      throw nodeError(
        new TypeError(`The property 'options.format' must be one of: undefined, 'buffer', 'jwk'. Received '${String(format)}'`),
        "ERR_INVALID_ARG_VALUE",
      );
    return Buffer.from(bytes);
  }
  equals(otherKeyObject: unknown): boolean {
    if (!(otherKeyObject instanceof KeyObject))
      throw nodeError(
        new TypeError(`The "otherKeyObject" argument must be an instance of KeyObject.${describeReceived(otherKeyObject)}`),
        "ERR_INVALID_ARG_TYPE",
      );
    const a = secretKeyBytes(this);
    const b = secretKeyBytes(otherKeyObject);
    return otherKeyObject.type === this.type && a.byteLength === b.byteLength && timingSafeEqual(a, b);
  }
  get [Symbol.toStringTag](): string {
    return "KeyObject";
  }
}

function secretKeyBytes(key: KeyObject): Uint8Array {
  const bytes = secretBytes.get(key);
  if (bytes === undefined) throw nodeError(new TypeError("Invalid KeyObject"), "ERR_INVALID_ARG_TYPE");
  return bytes;
}

/** Node's createSecretKey: a string (in `encoding`, utf8 by default), Buffer, TypedArray, DataView or ArrayBuffer. */
export function createSecretKey(key: string | Uint8Array | ArrayBuffer | DataView, encoding?: string): KeyObject {
  if (typeof key !== "string" && !isBinary(key))
    throw nodeError(
      new TypeError(`The "key" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.${describeReceived(key)}`),
      "ERR_INVALID_ARG_TYPE",
    );
  // A copy: changing the buffer later does not change the key, as in Node.
  return new KeyObject("secret", new SecretKeyHandle(Uint8Array.from(toBytes(key, encoding))));
}

function asymmetricUnavailable(name: string) {
  return (key?: unknown): never => {
    void key;
    throw nodeError(
      new Error(
        `crypto.${name}: asymmetric keys (PEM, DER, JWK) are not supported in the Headwater sandbox; only secret keys (createSecretKey, HMAC) are`,
      ),
      "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM",
    );
  };
}

export const createPrivateKey = asymmetricUnavailable("createPrivateKey");
export const createPublicKey = asymmetricUnavailable("createPublicKey");

/** The bytes of an HMAC key: as Node's createHmac, a string, binary data or a secret KeyObject. */
function hmacKeyBytes(key: unknown, encoding?: string): Uint8Array {
  if (key instanceof KeyObject) {
    if (key.type !== "secret")
      throw nodeError(new TypeError(`Invalid key object type ${String(key.type)}, expected secret.`), "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
    return Uint8Array.from(secretKeyBytes(key));
  }
  if (typeof key !== "string" && !isBinary(key))
    throw nodeError(
      new TypeError(
        `The "key" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey.${describeReceived(key)}`,
      ),
      "ERR_INVALID_ARG_TYPE",
    );
  return Uint8Array.from(toBytes(key, encoding));
}

export function createHmac(algorithm: string, key: Data | KeyObject, options?: { encoding?: string }): Hmac {
  return new Hmac(String(algorithm), hmacKeyBytes(key, options?.encoding));
}

export function hash(algorithm: string, data: Data, encoding = "hex"): string | Buffer {
  return createHash(algorithm).update(data).digest(encoding);
}

/** Bytes the host hands over per call; larger fills take several. */
const RANDOM_CHUNK = 65536;

/** Fills `bytes` with random bytes from the host (node:crypto). */
function fillRandom(bytes: Uint8Array): void {
  for (let at = 0; at < bytes.byteLength; at += RANDOM_CHUNK) {
    bytes.set(hostSync<Uint8Array>("crypto.randomBytes", { size: Math.min(RANDOM_CHUNK, bytes.byteLength - at) }), at);
  }
}

export function randomBytes(size: number, callback?: (err: Error | null, buf: Buffer) => void): Buffer {
  if (!Number.isInteger(size) || size < 0 || size > 2 ** 31 - 1)
    throw nodeError(
      new RangeError(`The value of "size" is out of range. It must be >= 0 && <= 2147483647. Received ${String(size)}`),
      "ERR_OUT_OF_RANGE",
    );
  const buf = Buffer.alloc(size);
  fillRandom(buf);
  if (callback) void Promise.resolve().then(() => callback(null, buf));
  return buf;
}

type RandomTarget = ArrayBuffer | ArrayBufferView;

/** The bytes `randomFillSync(buf, offset, size)` fills: offset and size count the view's elements, as in Node. */
function fillRange(buf: unknown, offset: unknown, size: unknown): Uint8Array {
  if (!(buf instanceof ArrayBuffer) && !ArrayBuffer.isView(buf))
    throw nodeError(
      new TypeError(`The "buf" argument must be an instance of ArrayBuffer or ArrayBufferView.${describeReceived(buf)}`),
      "ERR_INVALID_ARG_TYPE",
    );
  const all = buf instanceof ArrayBuffer ? new Uint8Array(buf) : new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  const element = (buf as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
  const check = (name: string, value: unknown, max: number): number => {
    if (typeof value !== "number" || Number.isNaN(value))
      throw nodeError(new TypeError(`The "${name}" argument must be of type number.${describeReceived(value)}`), "ERR_INVALID_ARG_TYPE");
    const bytes = value * element;
    if (!Number.isInteger(value) || bytes < 0 || bytes > max)
      throw nodeError(
        new RangeError(`The value of "${name}" is out of range. It must be >= 0 && <= ${max / element}. Received ${value}`),
        "ERR_OUT_OF_RANGE",
      );
    return bytes;
  };
  const start = offset === undefined ? 0 : check("offset", offset, all.byteLength);
  const length = size === undefined ? all.byteLength - start : check("size", size, all.byteLength - start);
  return all.subarray(start, start + length);
}

export function randomFillSync<T extends RandomTarget>(buf: T, offset?: number, size?: number): T {
  fillRandom(fillRange(buf, offset, size));
  return buf;
}

/** `randomFill(buf[, offset[, size]], callback)`: filled at once, the callback called after this turn. */
export function randomFill<T extends RandomTarget>(buf: T, ...rest: unknown[]): void {
  const callback = rest.pop();
  if (typeof callback !== "function")
    throw nodeError(
      new TypeError(`The "callback" argument must be of type function.${describeReceived(callback)}`),
      "ERR_INVALID_ARG_TYPE",
    );
  fillRandom(fillRange(buf, rest[0], rest[1]));
  void Promise.resolve().then(() => (callback as (err: Error | null, buf: T) => void)(null, buf));
}

export function getRandomValues<T extends ArrayBufferView>(array: T): T {
  if (!ArrayBuffer.isView(array)) throw new TypeError("getRandomValues expects an integer TypedArray");
  if (array.byteLength > 65536) throw new RangeError("getRandomValues: at most 65536 bytes");
  fillRandom(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
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

export function timingSafeEqual(a: Uint8Array | ArrayBuffer | DataView, b: Uint8Array | ArrayBuffer | DataView): boolean {
  for (const [name, v] of [
    ["buf1", a],
    ["buf2", b],
  ] as const)
    if (!isBinary(v))
      throw nodeError(
        new TypeError(`The "${name}" argument must be an instance of ArrayBuffer, Buffer, TypedArray, or DataView.${describeReceived(v)}`),
        "ERR_INVALID_ARG_TYPE",
      );
  // Byte views of both (a Uint16Array or a DataView compares its bytes, as in Node).
  const x = toBytes(a);
  const y = toBytes(b);
  if (x.byteLength !== y.byteLength)
    throw nodeError(new RangeError("Input buffers must have the same byte length"), "ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH");
  let diff = 0;
  for (let i = 0; i < x.byteLength; i++) diff |= x[i] ^ y[i];
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
  randomFillSync,
  randomFill,
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
  KeyObject,
  createSecretKey,
  createPrivateKey,
  createPublicKey,
};
