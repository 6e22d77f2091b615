// The crypto subset: hashes, HMAC, random bytes, randomUUID, timingSafeEqual, secret KeyObjects
// (createSecretKey; createHmac takes one, as jsonwebtoken 9 and jwa pass it), asymmetric keys
// (createPrivateKey, createPublicKey) and signatures (createSign, createVerify, sign, verify).
// Digests and signatures run on the host (node:crypto) through one synchronous bridge call each,
// bounded there (sandbox/hostKeys.ts); an asymmetric key is held here as its DER, out of reach of
// the KeyObject's user. Key pairs are generated there too, and diffieHellman of two keys. Ciphers
// (cryptoCipher.ts), key derivation (cryptoDerive.ts) and createECDH (cryptoEcdh.ts) have their
// own modules, re-exported here.
import { Buffer } from "buffer";
import { hostSync } from "../bridge.js";
import { KEY_PAIR_OPTIONS } from "../../rules.js";
import { concatBytes } from "../textCodec.js";
import { type Data, checkCallback, describeReceived, invalidType, isBinary, later, nodeError, toBytes } from "./cryptoArgs.js";
import { Cipheriv, Decipheriv, createCipheriv, createDecipheriv, getCiphers } from "./cryptoCipher.js";
import { hkdf, hkdfSync, pbkdf2, pbkdf2Sync, scrypt, scryptSync } from "./cryptoDerive.js";
import { ECDH, createECDH, getCurves } from "./cryptoEcdh.js";
import { CryptoKey, subtle } from "../subtle.js";

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

// The bytes of each secret KeyObject, out of reach of the object itself (no field to read or overwrite).
const secretBytes = new WeakMap<KeyObject, Uint8Array>();
// Only this module makes the handle a KeyObject is built from, as only Node's internals make one.
class SecretKeyHandle {
  constructor(readonly bytes: Uint8Array) {}
}

/** An asymmetric key as the host described it; the DER (PKCS#8 or SPKI) goes back to the host for each use. */
type HeldKey = Readonly<{
  type: "private" | "public";
  asymmetricKeyType: string;
  details: Readonly<Record<string, string | number>>;
  der: Uint8Array;
}>;
// Each asymmetric KeyObject's key, out of reach of the object as the secret bytes are.
const heldKeys = new WeakMap<KeyObject, HeldKey>();
class AsymmetricKeyHandle {
  constructor(readonly key: HeldKey) {}
}

/** What crosses to the host for a held key: its type and DER only. */
const keyRef = (key: HeldKey) => ({ type: key.type, der: key.der });

function keyFromHost(value: unknown): KeyObject {
  const v = value as HeldKey;
  const details: Record<string, string | number> = {};
  for (const [name, detail] of Object.entries(v.details)) details[name] = detail;
  const held: HeldKey = Object.freeze({
    type: v.type,
    asymmetricKeyType: String(v.asymmetricKeyType),
    details: Object.freeze(details),
    der: Uint8Array.from(v.der),
  });
  return held.type === "private" ? new PrivateKeyObject(new AsymmetricKeyHandle(held)) : new PublicKeyObject(new AsymmetricKeyHandle(held));
}

type KeyType = "secret" | "public" | "private";

/** Node's KeyObject: secret (symmetric) keys kept in the isolate, public and private keys used on the host. */
export class KeyObject {
  readonly #type: KeyType;
  constructor(type: string, handle: unknown) {
    if (type !== "secret" && type !== "public" && type !== "private")
      throw nodeError(new TypeError(`The argument 'type' is invalid. Received '${String(type)}'`), "ERR_INVALID_ARG_VALUE");
    if (type === "secret" ? !(handle instanceof SecretKeyHandle) : !(handle instanceof AsymmetricKeyHandle) || handle.key.type !== type)
      throw nodeError(new TypeError(`The "handle" argument must be of type object.${describeReceived(handle)}`), "ERR_INVALID_ARG_TYPE");
    this.#type = type;
    if (handle instanceof SecretKeyHandle) secretBytes.set(this, handle.bytes);
    else heldKeys.set(this, (handle as AsymmetricKeyHandle).key);
  }
  static from(key: unknown): KeyObject {
    // A CryptoKey's material stays in its private field, out of this module's reach: not converted.
    throw nodeError(new TypeError(`The "key" argument must be an instance of CryptoKey.${describeReceived(key)}`), "ERR_INVALID_ARG_TYPE");
  }
  get type(): KeyType {
    return this.#type;
  }
  get symmetricKeySize(): number | undefined {
    return secretBytes.get(this)?.byteLength;
  }
  get asymmetricKeyType(): string | undefined {
    return heldKeys.get(this)?.asymmetricKeyType;
  }
  /** A fresh object each time, as Node's: changing it changes nothing. publicExponent is a bigint. */
  get asymmetricKeyDetails(): Record<string, string | number | bigint> | undefined {
    const held = heldKeys.get(this);
    if (held === undefined) return undefined;
    const out: Record<string, string | number | bigint> = {};
    for (const [name, value] of Object.entries(held.details)) out[name] = name === "publicExponent" ? BigInt(value) : value;
    return out;
  }
  export(options?: { format?: string; type?: string; cipher?: string; passphrase?: string | Uint8Array }): unknown {
    if (options !== undefined && (options === null || typeof options !== "object"))
      throw nodeError(new TypeError(`The "options" argument must be of type object.${describeReceived(options)}`), "ERR_INVALID_ARG_TYPE");
    const held = heldKeys.get(this);
    if (held !== undefined) return exportHeldKey(held, options);
    const bytes = secretKeyBytes(this);
    const format = options?.format;
    if (format === "jwk") return { kty: "oct", k: base64url(bytes) };
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
    if (otherKeyObject.type !== this.type) return false;
    const mine = heldKeys.get(this);
    const theirs = heldKeys.get(otherKeyObject);
    if (mine !== undefined && theirs !== undefined) return hostSync<boolean>("crypto.keyEquals", { a: keyRef(mine), b: keyRef(theirs) });
    const a = secretKeyBytes(this);
    const b = secretKeyBytes(otherKeyObject);
    return a.byteLength === b.byteLength && timingSafeEqual(a, b);
  }
  get [Symbol.toStringTag](): string {
    return "KeyObject";
  }
}

// Node's own subclasses (not exported by Node either): their names show in Node's error messages.
class SecretKeyObject extends KeyObject {
  constructor(handle: unknown) {
    super("secret", handle);
  }
}
class PublicKeyObject extends KeyObject {
  constructor(handle: unknown) {
    super("public", handle);
  }
}
class PrivateKeyObject extends KeyObject {
  constructor(handle: unknown) {
    super("private", handle);
  }
}

// base64url by hand: the sandbox's Buffer knows only base64.
const base64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64").replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

function exportHeldKey(
  held: HeldKey,
  options: { format?: unknown; type?: unknown; cipher?: unknown; passphrase?: unknown } | undefined,
): unknown {
  if (options === undefined)
    throw nodeError(new TypeError(`The "options" argument must be of type object. Received undefined`), "ERR_INVALID_ARG_TYPE");
  const text = (name: string, v: unknown) => {
    if (v === undefined || typeof v === "string") return v;
    throw nodeError(new TypeError(`The property 'options.${name}' is invalid.${describeReceived(v)}`), "ERR_INVALID_ARG_VALUE");
  };
  const passphrase = options.passphrase;
  const exported = hostSync<{ format: string; value: unknown }>("crypto.exportKey", {
    key: keyRef(held),
    format: text("format", options.format),
    type: text("type", options.type),
    cipher: text("cipher", options.cipher),
    passphrase:
      passphrase === undefined || typeof passphrase === "string"
        ? passphrase
        : isBinary(passphrase)
          ? Uint8Array.from(toBytes(passphrase))
          : String(passphrase),
  });
  if (exported.format === "der") return Buffer.from(exported.value as Uint8Array);
  if (exported.format === "jwk") return { ...(exported.value as Record<string, unknown>) };
  return String(exported.value);
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
  return new SecretKeyObject(new SecretKeyHandle(Uint8Array.from(toBytes(key, encoding))));
}

type KeyInput = string | Uint8Array | ArrayBuffer | DataView | KeyObject | Record<string, unknown>;

function wrongKeyType(key: KeyObject, expected: string): TypeError {
  return nodeError(new TypeError(`Invalid key object type ${key.type}, expected ${expected}.`), "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
}

/** The host's arguments for key material (PEM, DER, JWK), as Node's prepareAsymmetricKey reads them. */
function materialArgs(input: unknown, withKeyObjects: boolean): Record<string, unknown> {
  if (typeof input === "string") return { key: input, format: "pem" };
  if (isBinary(input)) return { key: Uint8Array.from(toBytes(input)), format: "pem" };
  if (input !== null && typeof input === "object" && !(input instanceof KeyObject)) {
    const o = input as Record<string, unknown>;
    const key = o["key"];
    const option = (name: string) => {
      const v = o[name];
      if (v === undefined || typeof v === "string") return v;
      throw nodeError(new TypeError(`The property 'key.${name}' is invalid.${describeReceived(v)}`), "ERR_INVALID_ARG_VALUE");
    };
    const format = option("format");
    if (format === "jwk") {
      if (key === null || typeof key !== "object")
        throw nodeError(new TypeError(`The "key.key" property must be of type object.${describeReceived(key)}`), "ERR_INVALID_ARG_TYPE");
      return { jwk: JSON.stringify(key), format };
    }
    const encoding = option("encoding");
    const passphrase = o["passphrase"];
    let material: string | Uint8Array;
    if (typeof key === "string") material = encoding === undefined ? key : Uint8Array.from(Buffer.from(key, encoding as BufferEncoding));
    else if (isBinary(key)) material = Uint8Array.from(toBytes(key));
    else
      throw nodeError(
        new TypeError(
          `The "key.key" property must be of type string or an instance of ${withKeyObjects ? "ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey" : "ArrayBuffer, Buffer, TypedArray, or DataView"}.${describeReceived(key)}`,
        ),
        "ERR_INVALID_ARG_TYPE",
      );
    return {
      key: material,
      format,
      type: option("type"),
      passphrase:
        passphrase === undefined || passphrase === null || typeof passphrase === "string"
          ? (passphrase ?? undefined)
          : isBinary(passphrase)
            ? Uint8Array.from(toBytes(passphrase))
            : String(passphrase),
    };
  }
  throw nodeError(
    new TypeError(
      `The "key" argument must be of type string or an instance of ${withKeyObjects ? "ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey" : "ArrayBuffer, Buffer, TypedArray, or DataView"}.${describeReceived(input)}`,
    ),
    "ERR_INVALID_ARG_TYPE",
  );
}

/** Node's createPrivateKey: PEM, DER (pkcs1, pkcs8, sec1) or JWK, passphrase-encrypted or not. */
export function createPrivateKey(key: KeyInput): KeyObject {
  return keyFromHost(hostSync("crypto.createKey", { kind: "private", ...materialArgs(key, false) }));
}

/** Node's createPublicKey: a public key, a certificate, a private key (its public half) or a private KeyObject. */
export function createPublicKey(key: KeyInput): KeyObject {
  const given =
    key !== null && typeof key === "object" && !(key instanceof KeyObject) && (key as Record<string, unknown>)["key"] instanceof KeyObject
      ? (key as Record<string, unknown>)["key"]
      : key;
  if (given instanceof KeyObject) {
    const held = heldKeys.get(given);
    if (held === undefined || held.type !== "private") throw wrongKeyType(given, "private");
    return keyFromHost(hostSync("crypto.createKey", { kind: "public", from: keyRef(held) }));
  }
  return keyFromHost(hostSync("crypto.createKey", { kind: "public", ...materialArgs(key, true) }));
}

/** The key a signature is made (`private`) or checked (`public`) with, and its signing options. */
function signingKey(input: unknown, use: "private" | "public"): Record<string, unknown> {
  const o =
    input !== null && typeof input === "object" && !(input instanceof KeyObject) && !isBinary(input)
      ? (input as Record<string, unknown>)
      : undefined;
  const given = o !== undefined ? o["key"] : input;
  let held: HeldKey | undefined;
  if (given instanceof KeyObject) {
    held = heldKeys.get(given);
    if (held === undefined || (use === "private" && held.type !== "private"))
      throw wrongKeyType(given, use === "private" ? "private" : "private or public");
  } else {
    held = heldKeys.get(use === "private" ? createPrivateKey(input as KeyInput) : createPublicKey(input as KeyInput));
  }
  const options: Record<string, unknown> = { key: keyRef(held as HeldKey) };
  if (o !== undefined)
    for (const name of ["padding", "saltLength", "dsaEncoding"]) {
      const v = o[name];
      if (v !== undefined) options[name] = typeof v === "number" || typeof v === "string" ? v : String(v);
    }
  return options;
}

function signatureOutput(bytes: Uint8Array, encoding?: string): string | Buffer {
  return encodeDigest(bytes, encoding);
}

/** What Sign and Verify share: the algorithm (checked at once, as Node does) and the data gathered by update(). */
class SignatureData {
  #algorithm: string;
  #chunks: Uint8Array[] = [];
  #done = false;
  constructor(algorithm: string) {
    this.#algorithm = String(algorithm);
    hostSync("crypto.signCheck", { algorithm: this.#algorithm });
  }
  update(data: Data, encoding?: string): this {
    this.#usable();
    this.#chunks.push(Uint8Array.from(toBytes(data, encoding)));
    return this;
  }
  #usable(): void {
    if (this.#done) throw nodeError(new Error("Not initialised"), "ERR_CRYPTO_INVALID_STATE");
  }
  /** The data gathered, once: `prepare` (the key and signature read) runs first, so a bad argument leaves it usable. */
  protected take<T>(prepare: () => T): { algorithm: string; data: Uint8Array; prepared: T } {
    this.#usable();
    const prepared = prepare();
    this.#done = true;
    const data = concatBytes(this.#chunks);
    this.#chunks = [];
    return { algorithm: this.#algorithm, data, prepared };
  }
}

/** Node's Sign (createSign): data gathered here, signed on the host in one call. */
export class Sign extends SignatureData {
  sign(privateKey: unknown, outputEncoding?: string): string | Buffer {
    const { algorithm, data, prepared: options } = this.take(() => signingKey(privateKey, "private"));
    return signatureOutput(hostSync<Uint8Array>("crypto.sign", { ...options, algorithm, data }), outputEncoding);
  }
}

/** Node's Verify (createVerify). */
export class Verify extends SignatureData {
  verify(publicKey: unknown, signature: Data, signatureEncoding?: string): boolean {
    const { algorithm, data, prepared } = this.take(() => ({
      options: signingKey(publicKey, "public"),
      sig: signatureBytes(signature, signatureEncoding),
    }));
    return hostSync<boolean>("crypto.verify", { ...prepared.options, algorithm, data, signature: prepared.sig });
  }
}

function signatureBytes(signature: unknown, encoding?: string): Uint8Array {
  if (typeof signature !== "string" && !isBinary(signature))
    throw nodeError(
      new TypeError(
        `The "signature" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView.${describeReceived(signature)}`,
      ),
      "ERR_INVALID_ARG_TYPE",
    );
  return Uint8Array.from(toBytes(signature, encoding));
}

export function createSign(algorithm: string): Sign {
  return new Sign(algorithm);
}

export function createVerify(algorithm: string): Verify {
  return new Verify(algorithm);
}

function oneShotData(data: unknown): Uint8Array {
  if (typeof data !== "string" && !isBinary(data))
    throw nodeError(
      new TypeError(
        `The "data" argument must be of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView.${describeReceived(data)}`,
      ),
      "ERR_INVALID_ARG_TYPE",
    );
  return Uint8Array.from(toBytes(data));
}

function oneShotAlgorithm(algorithm: unknown): string | null {
  if (algorithm === null || algorithm === undefined) return null;
  if (typeof algorithm !== "string")
    throw nodeError(
      new TypeError(`The "algorithm" argument must be of type string.${describeReceived(algorithm)}`),
      "ERR_INVALID_ARG_TYPE",
    );
  return algorithm;
}

/** With a callback: the result (or the error) after this turn, as Node's asynchronous form. */
function answer<T>(compute: () => T, callback: unknown): T | undefined {
  if (typeof callback !== "function") return compute();
  const cb = callback as (err: Error | null, value?: T) => void;
  let value: T;
  try {
    value = compute();
  } catch (err) {
    void Promise.resolve().then(() => cb(err as Error));
    return undefined;
  }
  void Promise.resolve().then(() => cb(null, value));
  return undefined;
}

/** crypto.sign(algorithm | null, data, key[, callback]): Ed25519 and Ed448 take null. */
export function sign(algorithm: unknown, data: unknown, key: unknown, callback?: unknown): Buffer | undefined {
  return answer(() => {
    const options = signingKey(key, "private");
    return Buffer.from(
      hostSync<Uint8Array>("crypto.sign", { ...options, algorithm: oneShotAlgorithm(algorithm), data: oneShotData(data) }),
    );
  }, callback);
}

/** crypto.verify(algorithm | null, data, key, signature[, callback]). */
export function verify(algorithm: unknown, data: unknown, key: unknown, signature: unknown, callback?: unknown): boolean | undefined {
  return answer(() => {
    const options = signingKey(key, "public");
    return hostSync<boolean>("crypto.verify", {
      ...options,
      algorithm: oneShotAlgorithm(algorithm),
      data: oneShotData(data),
      signature: signatureBytes(signature),
    });
  }, callback);
}

/** Node's crypto.constants, as the host's Node has them: fixed for that Node, so written into the
 * prelude when it is built (preludeBundle.ts), not asked of the host in every context. */
declare const __HW_CRYPTO_CONSTANTS__: Record<string, number | string>;
export const constants: Readonly<Record<string, number | string>> = Object.freeze({
  ...(typeof __HW_CRYPTO_CONSTANTS__ === "object" ? __HW_CRYPTO_CONSTANTS__ : {}),
});

/** The key an HMAC, a cipher or HKDF takes, as Node's prepareSecretKey reads it: a string (in
 * `encoding`), binary data or a secret KeyObject, copied. `accepted` is what Node's error says the
 * argument may be. */
export function secretKeyInput(value: unknown, name: string, accepted: string, encoding?: string): Uint8Array {
  if (value instanceof KeyObject) {
    if (value.type !== "secret")
      throw nodeError(
        new TypeError(`Invalid key object type ${String(value.type)}, expected secret.`),
        "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE",
      );
    return Uint8Array.from(secretKeyBytes(value));
  }
  if (typeof value !== "string" && !isBinary(value)) throw invalidType(name, accepted, value);
  return Uint8Array.from(toBytes(value, encoding));
}

/** What a key may be, in Node's words for createHmac and createCipheriv. */
export const KEY_INPUT = "of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject, or CryptoKey";

export function createHmac(algorithm: string, key: Data | KeyObject, options?: { encoding?: string }): Hmac {
  return new Hmac(String(algorithm), secretKeyInput(key, "key", KEY_INPUT, options?.encoding));
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

/** Node's way of showing a wrong option value: strings quoted, other values as they print. */
const shown = (v: unknown) => (typeof v === "string" ? `'${v}'` : String(v));

/** A key encoding option (publicKeyEncoding, privateKeyEncoding) as plain data for the host, which checks it with Node. */
function keyEncoding(v: unknown): unknown {
  if (v === null || typeof v !== "object") return v;
  const o = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const name of ["format", "type", "cipher"])
    if (o[name] !== undefined) out[name] = typeof o[name] === "object" ? String(o[name]) : o[name];
  const passphrase = o["passphrase"];
  if (passphrase !== undefined) out["passphrase"] = isBinary(passphrase) ? Uint8Array.from(toBytes(passphrase)) : String(passphrase);
  return out;
}

type GeneratedSide = { key?: unknown; value?: string | Uint8Array; jwk?: string };

function generatedKey(side: GeneratedSide): unknown {
  if (side.key !== undefined) return keyFromHost(side.key);
  if (side.jwk !== undefined) return JSON.parse(side.jwk) as unknown;
  return typeof side.value === "string" ? side.value : Buffer.from(side.value as Uint8Array);
}

function keyPair(type: unknown, options: unknown): { publicKey: unknown; privateKey: unknown } {
  if (typeof type !== "string") throw invalidType("type", "of type string", type);
  let given: Record<string, unknown> | undefined;
  if (options !== undefined) {
    if (options === null || typeof options !== "object") throw invalidType("options", "of type object", options);
    const o = options as Record<string, unknown>;
    given = {};
    for (const name of KEY_PAIR_OPTIONS) if (o[name] !== undefined) given[name] = typeof o[name] === "object" ? String(o[name]) : o[name];
    given["publicKeyEncoding"] = keyEncoding(o["publicKeyEncoding"]);
    given["privateKeyEncoding"] = keyEncoding(o["privateKeyEncoding"]);
  }
  // Generated on the host (bounded there: RSA moduli of at most 4096 bits, no DSA or DH).
  const pair = hostSync<{ publicKey: GeneratedSide; privateKey: GeneratedSide }>("crypto.generateKeyPair", { type, options: given });
  return { publicKey: generatedKey(pair.publicKey), privateKey: generatedKey(pair.privateKey) };
}

/** Node's generateKeyPairSync: KeyObjects, or the encodings asked for (PEM or JWK text, DER bytes). */
export function generateKeyPairSync(type: unknown, options?: unknown): { publicKey: unknown; privateKey: unknown } {
  return keyPair(type, options);
}

/** generateKeyPair(type[, options], callback): callback(err, publicKey, privateKey) after this turn. */
export function generateKeyPair(type: unknown, options: unknown, callback?: unknown): void {
  if (typeof options === "function") [options, callback] = [undefined, options];
  const cb = checkCallback(callback);
  const pair = keyPair(type, options);
  later(cb, pair.publicKey, pair.privateKey);
}

/** Node's generateKeySync: a secret KeyObject of random bytes, for "hmac" (8 to 2^31-1 bits) or "aes" (128, 192, 256). */
export function generateKeySync(type: unknown, options: unknown): KeyObject {
  if (typeof type !== "string") throw invalidType("type", "of type string", type);
  if (options === null || typeof options !== "object") throw invalidType("options", "of type object", options);
  const length = (options as { length?: unknown }).length;
  if (type === "hmac") {
    if (typeof length !== "number")
      throw nodeError(
        new TypeError(`The "options.length" property must be of type number.${describeReceived(length)}`),
        "ERR_INVALID_ARG_TYPE",
      );
    if (!Number.isInteger(length) || length < 8 || length > 2 ** 31 - 1)
      throw nodeError(
        new RangeError(`The value of "options.length" is out of range. It must be >= 8 && <= 2147483647. Received ${length}`),
        "ERR_OUT_OF_RANGE",
      );
  } else if (type === "aes") {
    if (length !== 128 && length !== 192 && length !== 256)
      throw nodeError(
        new TypeError(`The property 'options.length' must be one of: 128, 192, 256. Received ${shown(length)}`),
        "ERR_INVALID_ARG_VALUE",
      );
  } else
    throw nodeError(new TypeError(`The argument 'type' must be a supported key type. Received ${shown(type)}`), "ERR_INVALID_ARG_VALUE");
  const bytes = new Uint8Array(Math.floor(length / 8));
  fillRandom(bytes);
  return new SecretKeyObject(new SecretKeyHandle(bytes));
}

/** generateKey(type, options, callback): callback(err, key) after this turn. */
export function generateKey(type: unknown, options: unknown, callback?: unknown): void {
  const cb = checkCallback(callback);
  later(cb, generateKeySync(type, options));
}

/** crypto.diffieHellman({ privateKey, publicKey }): the shared secret of two KeyObjects (x25519, x448, ec), computed on the host. */
export function diffieHellman(options: unknown): Buffer {
  if (options === null || typeof options !== "object") throw invalidType("options", "of type object", options);
  const key = (name: "privateKey" | "publicKey") => {
    const given = (options as Record<string, unknown>)[name];
    const held = given instanceof KeyObject ? heldKeys.get(given) : undefined;
    if (held === undefined) {
      const received =
        given !== null && typeof given === "object" && !(given instanceof KeyObject)
          ? describeReceived(given)
          : ` Received ${shown(given)}`;
      throw nodeError(new TypeError(`The property 'options.${name}' is invalid.${received}`), "ERR_INVALID_ARG_VALUE");
    }
    if (name === "privateKey" && held.type !== "private") throw wrongKeyType(given as KeyObject, "private");
    return keyRef(held);
  };
  return Buffer.from(hostSync<Uint8Array>("crypto.diffieHellman", { privateKey: key("privateKey"), publicKey: key("publicKey") }));
}

export { Cipheriv, Decipheriv, createCipheriv, createDecipheriv, getCiphers };
export { ECDH, createECDH, getCurves };
export { hkdf, hkdfSync, pbkdf2, pbkdf2Sync, scrypt, scryptSync };

// WebCrypto (crypto.subtle, CryptoKey: ../subtle.ts); the web global `crypto` is this object, as in Node.
export { subtle };
export const webcrypto = { getRandomValues, randomUUID, subtle, CryptoKey };

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
  getCiphers,
  createCipheriv,
  createDecipheriv,
  Cipheriv,
  Decipheriv,
  createSign,
  createVerify,
  sign,
  verify,
  constants,
  Sign,
  Verify,
  generateKeyPairSync,
  generateKeyPair,
  generateKeySync,
  generateKey,
  createECDH,
  ECDH,
  getCurves,
  diffieHellman,
  pbkdf2,
  pbkdf2Sync,
  scrypt,
  scryptSync,
  hkdf,
  hkdfSync,
  webcrypto,
  subtle,
  Hash,
  Hmac,
  KeyObject,
  createSecretKey,
  createPrivateKey,
  createPublicKey,
};
