// WebCrypto's SubtleCrypto and CryptoKey, as Node 20 has them at `crypto.subtle` (the global and
// node:crypto's `webcrypto.subtle`): jose 6, @octokit/webhooks-methods' web build, Stripe's
// SubtleCryptoProvider and fetch-era SDKs sign, verify, encrypt and derive with it. The crypto
// runs on the host with Node's synchronous APIs, one bridge call per operation (digests, HMAC and
// asymmetric keys through the operations node:crypto's module already uses, sandbox/hostKeys.ts;
// ciphers, key derivation and key generation in sandbox/hostSubtle.ts), bounded there. The
// algorithm rules (names, parameters, usages, JWK members) are checked here, with the
// DOMException names Node gives.
//
// A key's material (secret bytes, or the DER of an asymmetric key) lives in a private field of the
// CryptoKey, which no prototype or global a component replaces can reach. Material the component
// never saw (generated, derived, unwrapped, or any key once imported) is only read here by index
// or with primordials, and handed to the host inside an object literal: never passed to a method
// or getter component code could have replaced, so a non-extractable key stays so.
import { Buffer } from "buffer";
import { hostSync } from "./bridge.js";
import { DOMException } from "./domEvents.js";
import {
  ObjectSetPrototypeOf,
  parse,
  StringFromCharCode,
  StringPrototypeCharCodeAt,
  stringify,
  TypedArrayByteLength,
} from "./primordials.js";
import { concatBytes, utf8Encode } from "./textCodec.js";

type AnyRecord = Record<string, unknown>;
type KeyType = "secret" | "public" | "private";

/** What the host says of an asymmetric key (hostKeys.ts describeKey). */
type HostKey = { type: "public" | "private"; asymmetricKeyType: string; details: Record<string, string | number>; der: Uint8Array };

/** A key's internal slots: everything in a null-prototype object, so a missing member reads no inherited getter. */
interface Slots {
  type: KeyType;
  extractable: boolean;
  /** The normalized algorithm this code reads; `exposed` is the copy `key.algorithm` hands out. */
  name: string;
  hash: string | undefined;
  length: number | undefined;
  namedCurve: string | undefined;
  modulusLength: number | undefined;
  publicExponent: string | undefined;
  usages: readonly string[];
  /** Secret keys: their bytes. */
  secret: Uint8Array | undefined;
  /** Asymmetric keys: their DER (PKCS#8 or SPKI), as the host gave it. */
  der: Uint8Array | undefined;
  exposed: AnyRecord;
}

const MAX_DATA_BYTES = 64 * 1024 * 1024;
const MAX_KEY_BYTES = 64 * 1024;

// --- Errors ---------------------------------------------------------------------------------------

const domError = (message: string, name: string) => new DOMException(message, name);
const codedTypeError = (message: string, code = "ERR_INVALID_ARG_TYPE") => Object.assign(new TypeError(message), { code });

/** WebIDL's check of the argument count, in Node's words. */
function missingArguments(method: string, given: number, needed: number): void {
  if (given >= needed) return;
  throw codedTypeError(
    `Failed to execute '${method}' on 'SubtleCrypto': ${needed} argument${needed > 1 ? "s" : ""} required, but only ${given} present.`,
    "ERR_MISSING_ARGS",
  );
}

/**
 * A host call whose failure becomes the DOMException `name` (OperationError, DataError): the host's
 * message when it refused the input as beyond the sandbox's bounds, `message` otherwise.
 */
function onHost<T>(op: string, args: AnyRecord, name: string, message: string): T {
  try {
    return hostSync<T>(op, args);
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    throw domError(e.code === "ERR_OUT_OF_RANGE" ? String(e.message) : message, name);
  }
}

const operationFailed = "The operation failed for an operation-specific reason";

// --- Algorithms -----------------------------------------------------------------------------------

/** The hashes WebCrypto names, with Node's name, output bits and the HMAC block bits. */
const HASHES: Record<string, readonly [string, number, number]> = {
  __proto__: null,
  "SHA-1": ["sha1", 160, 512],
  "SHA-256": ["sha256", 256, 512],
  "SHA-384": ["sha384", 384, 1024],
  "SHA-512": ["sha512", 512, 1024],
} as unknown as Record<string, readonly [string, number, number]>;

const ALGORITHMS = [
  "SHA-1",
  "SHA-256",
  "SHA-384",
  "SHA-512",
  "HMAC",
  "AES-GCM",
  "AES-CBC",
  "AES-CTR",
  "RSASSA-PKCS1-v1_5",
  "RSA-PSS",
  "RSA-OAEP",
  "ECDSA",
  "ECDH",
  "Ed25519",
  "X25519",
  "PBKDF2",
  "HKDF",
];
/** Registered names by their upper case: WebCrypto's names match case-insensitively. */
const CANONICAL: Record<string, string> = { __proto__: null } as unknown as Record<string, string>;
for (const name of ALGORITHMS) CANONICAL[name.toUpperCase()] = name;
/** Names WebCrypto has that the sandbox does not offer. */
const UNAVAILABLE = new Set(["AES-KW", "ED448", "X448"]);

const CURVES: Record<string, readonly [string, number, Uint8Array]> = {
  __proto__: null,
  // WebCrypto's name: OpenSSL's (asymmetricKeyDetails.namedCurve), coordinate bytes, the curve's OID.
  "P-256": ["prime256v1", 32, Uint8Array.of(0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07)],
  "P-384": ["secp384r1", 48, Uint8Array.of(0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22)],
  "P-521": ["secp521r1", 66, Uint8Array.of(0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23)],
} as unknown as Record<string, readonly [string, number, Uint8Array]>;
const EC_PUBLIC_KEY_OID = Uint8Array.of(0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01);
const OKP_OIDS: Record<string, Uint8Array> = {
  __proto__: null,
  Ed25519: Uint8Array.of(0x06, 0x03, 0x2b, 0x65, 0x70),
  X25519: Uint8Array.of(0x06, 0x03, 0x2b, 0x65, 0x6e),
} as unknown as Record<string, Uint8Array>;

const isRecord = (v: unknown): v is AnyRecord => v !== null && typeof v === "object";

/** The registered name of `algorithm` (a string or `{ name }`), if `allowed` has it. */
function algorithmName(algorithm: unknown, allowed: readonly string[]): string {
  let name: unknown = algorithm;
  if (isRecord(algorithm)) {
    name = algorithm["name"];
    if (name === undefined) throw codedTypeError('Algorithm: The "name" member is required', "ERR_MISSING_OPTION");
  } else if (typeof algorithm !== "string") throw codedTypeError("Algorithm: must be a string or an object with a name");
  const upper = String(name).toUpperCase();
  const canonical = CANONICAL[upper];
  if (canonical === undefined || !allowed.includes(canonical)) {
    if (UNAVAILABLE.has(upper)) throw domError(`${String(name)} is not available in the Headwater sandbox`, "NotSupportedError");
    throw domError("Unrecognized algorithm name", "NotSupportedError");
  }
  return canonical;
}

const param = (algorithm: unknown, member: string): unknown => (isRecord(algorithm) ? algorithm[member] : undefined);

function required(algorithm: unknown, member: string): unknown {
  const v = param(algorithm, member);
  if (v === undefined) throw codedTypeError(`Algorithm: The "${member}" member is required`, "ERR_MISSING_OPTION");
  return v;
}

/** A `hash` member (a name or `{ name }`) as its WebCrypto name. */
function hashOf(v: unknown): string {
  const name = algorithmName(v, ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]);
  return name;
}

const nodeHash = (name: string) => HASHES[name][0];

function integerMember(algorithm: unknown, member: string, optional = false): number | undefined {
  const v = optional ? param(algorithm, member) : required(algorithm, member);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw codedTypeError(`Algorithm: The "${member}" member must be a non-negative number`);
  return Math.floor(n);
}

// --- Bytes ----------------------------------------------------------------------------------------

/** A copy of a BufferSource (ArrayBuffer or view) the caller gave; changing theirs later changes nothing. */
function bufferSource(v: unknown, what: string, max = MAX_DATA_BYTES): Uint8Array {
  let view: Uint8Array;
  if (v instanceof ArrayBuffer) view = new Uint8Array(v);
  else if (ArrayBuffer.isView(v)) view = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  else throw codedTypeError(`The "${what}" argument must be an instance of ArrayBuffer, TypedArray, or DataView`);
  if (view.byteLength > max)
    throw domError(
      `The ${what} is ${view.byteLength} bytes; the Headwater sandbox takes at most ${max} bytes (host-side work is bounded)`,
      "OperationError",
    );
  return new Uint8Array(view);
}

/** An ArrayBuffer holding `bytes`, as WebCrypto answers. */
function arrayBuffer(bytes: Uint8Array): ArrayBuffer {
  const out = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(out).set(bytes);
  return out;
}

/** One DER element (lengths below 65536, all a public key needs). */
function der(tag: number, body: Uint8Array): Uint8Array {
  const n = body.byteLength;
  const head = n < 128 ? Uint8Array.of(tag, n) : n < 256 ? Uint8Array.of(tag, 0x81, n) : Uint8Array.of(tag, 0x82, n >> 8, n & 0xff);
  return concatBytes([head, body]);
}

// base64url by hand: the sandbox's Buffer knows only base64.
const base64url = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64").replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");

/** The first `size` bytes of `bytes`, copied by index (no method or getter of theirs is used). */
function leading(bytes: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = bytes[i];
  return out;
}

/** A JWK member's bytes (base64url, or base64), decoded with primordials only: it may be key material the component never saw. */
function fromBase64url(v: unknown, member: string): Uint8Array {
  const invalid = () => domError(`Invalid JWK "${member}" Parameter`, "DataError");
  if (typeof v !== "string" || v.length % 4 === 1) throw invalid();
  const out = new Uint8Array((v.length * 3) >> 2);
  let acc = 0;
  let bits = 0;
  let at = 0;
  for (let i = 0; i < v.length; i++) {
    const c = StringPrototypeCharCodeAt(v, i);
    const d =
      c >= 65 && c <= 90
        ? c - 65
        : c >= 97 && c <= 122
          ? c - 71
          : c >= 48 && c <= 57
            ? c + 4
            : c === 45 || c === 43
              ? 62
              : c === 95 || c === 47
                ? 63
                : -1;
    if (d < 0) throw invalid();
    acc = ((acc << 6) | d) & 0xffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (acc >> bits) & 0xff;
    }
  }
  return at === TypedArrayByteLength(out) ? out : leading(out, at);
}

/** JSON text of bytes that are ASCII (an unwrapped JWK), decoded with primordials only. */
function asciiText(bytes: Uint8Array): string {
  let text = "";
  const size = TypedArrayByteLength(bytes);
  for (let i = 0; i < size; i++) {
    if (bytes[i] > 0x7e) throw domError("The unwrapped key is not a JSON Web Key", "DataError");
    text += StringFromCharCode(bytes[i]);
  }
  return text;
}

/** Big-endian bytes of a non-negative integer given in decimal (an RSA public exponent). */
function integerBytes(decimal: string): Uint8Array {
  let hex = BigInt(decimal).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  return new Uint8Array(Buffer.from(hex, "hex"));
}

/** Random bytes for a secret key (at most 65536, one host call): used as the host gave them, copied through nothing. */
function randomKeyBytes(size: number): Uint8Array {
  return hostSync<Uint8Array>("crypto.randomBytes", { size });
}

// --- CryptoKey ------------------------------------------------------------------------------------

/** Only this module makes keys, as only Node's internals do. */
const CONSTRUCTING = Symbol("CryptoKey");
let slotsOf: (key: unknown) => Slots | undefined;

function illegalConstructor(): TypeError {
  return codedTypeError("Illegal constructor", "ERR_ILLEGAL_CONSTRUCTOR");
}

function invalidThis(what: string): TypeError {
  return codedTypeError(`Value of "this" must be of type ${what}`, "ERR_INVALID_THIS");
}

export class CryptoKey {
  readonly #slots: Slots;
  constructor(token?: unknown, slots?: Slots) {
    if (token !== CONSTRUCTING || slots === undefined) throw illegalConstructor();
    this.#slots = slots;
  }
  static {
    slotsOf = (key) => (isRecord(key) && #slots in key ? (key as CryptoKey).#slots : undefined);
  }
  get type(): KeyType {
    return slotsOrThrow(this).type;
  }
  get extractable(): boolean {
    return slotsOrThrow(this).extractable;
  }
  get algorithm(): AnyRecord {
    return slotsOrThrow(this).exposed;
  }
  get usages(): string[] {
    const out: string[] = [];
    for (const usage of slotsOrThrow(this).usages) out.push(usage);
    return out;
  }
  get [Symbol.toStringTag](): string {
    return "CryptoKey";
  }
}

function slotsOrThrow(key: unknown): Slots {
  const slots = slotsOf(key);
  if (slots === undefined) throw invalidThis("CryptoKey");
  return slots;
}

type KeyAlgorithm = Pick<Slots, "name" | "hash" | "length" | "namedCurve" | "modulusLength" | "publicExponent">;

function makeKey(type: KeyType, algorithm: KeyAlgorithm, extractable: boolean, usages: readonly string[], material: Uint8Array): CryptoKey {
  const exposed: AnyRecord = { name: algorithm.name };
  if (algorithm.modulusLength !== undefined) exposed["modulusLength"] = algorithm.modulusLength;
  if (algorithm.publicExponent !== undefined) exposed["publicExponent"] = integerBytes(algorithm.publicExponent);
  if (algorithm.length !== undefined) exposed["length"] = algorithm.length;
  if (algorithm.namedCurve !== undefined) exposed["namedCurve"] = algorithm.namedCurve;
  if (algorithm.hash !== undefined) exposed["hash"] = { name: algorithm.hash };
  const slots = {
    __proto__: null,
    type,
    extractable,
    name: algorithm.name,
    hash: algorithm.hash,
    length: algorithm.length,
    namedCurve: algorithm.namedCurve,
    modulusLength: algorithm.modulusLength,
    publicExponent: algorithm.publicExponent,
    usages: Object.freeze([...usages]),
    secret: type === "secret" ? material : undefined,
    der: type === "secret" ? undefined : material,
    exposed,
  } as unknown as Slots;
  return new CryptoKey(CONSTRUCTING, slots);
}

/** What crosses to the host for an asymmetric key: its type and DER only. */
const keyRef = (slots: Slots) => ({ type: slots.type, der: slots.der });

function cryptoKeyArgument(v: unknown, name: string): Slots {
  const slots = slotsOf(v);
  if (slots === undefined) throw codedTypeError(`The "${name}" argument must be an instance of CryptoKey.`);
  return slots;
}

/** The key may be used for `usage` with `name` (InvalidAccessError otherwise, as Node). */
function usableKey(v: unknown, argument: string, name: string, usage: string): Slots {
  const slots = cryptoKeyArgument(v, argument);
  if (slots.name !== name || !slots.usages.includes(usage)) throw domError(`Unable to use this key to ${usage}`, "InvalidAccessError");
  return slots;
}

// --- Usages ---------------------------------------------------------------------------------------

const USAGES = new Set(["encrypt", "decrypt", "sign", "verify", "deriveKey", "deriveBits", "wrapKey", "unwrapKey"]);

function usageList(v: unknown): string[] {
  if (!Array.isArray(v)) throw codedTypeError('The "keyUsages" argument must be a sequence of KeyUsage');
  const out: string[] = [];
  for (const usage of v as unknown[]) {
    if (typeof usage !== "string" || !USAGES.has(usage))
      throw codedTypeError(`The "keyUsages" argument has an invalid KeyUsage ${String(usage).slice(0, 32)}`, "ERR_INVALID_ARG_VALUE");
    if (!out.includes(usage)) out.push(usage);
  }
  return out;
}

/** The usages each kind of key of an algorithm may have. */
function allowedUsages(name: string): { secret?: string[]; public?: string[]; private?: string[] } {
  switch (name) {
    case "HMAC":
      return { secret: ["sign", "verify"] };
    case "AES-GCM":
    case "AES-CBC":
    case "AES-CTR":
      return { secret: ["encrypt", "decrypt", "wrapKey", "unwrapKey"] };
    case "PBKDF2":
    case "HKDF":
      return { secret: ["deriveKey", "deriveBits"] };
    case "RSA-OAEP":
      return { public: ["encrypt", "wrapKey"], private: ["decrypt", "unwrapKey"] };
    case "ECDH":
    case "X25519":
      return { public: [], private: ["deriveKey", "deriveBits"] };
    default:
      return { public: ["verify"], private: ["sign"] };
  }
}

function checkUsages(name: string, type: KeyType, usages: string[]): void {
  const allowed = allowedUsages(name)[type] ?? [];
  for (const usage of usages) if (!allowed.includes(usage)) throw domError(`Unsupported key usage for a ${name} key`, "SyntaxError");
  if (usages.length === 0 && type !== "public") throw domError("Usages cannot be empty when creating a key.", "SyntaxError");
}

// --- Import ---------------------------------------------------------------------------------------

const SYMMETRIC = ["HMAC", "AES-GCM", "AES-CBC", "AES-CTR", "PBKDF2", "HKDF"];
const RSA = ["RSASSA-PKCS1-v1_5", "RSA-PSS", "RSA-OAEP"];
const EC = ["ECDSA", "ECDH"];

/** The `alg` of a JWK for a key of this algorithm (Node's names). */
function jwkAlg(algorithm: KeyAlgorithm): string | undefined {
  const bits = algorithm.hash === undefined ? "" : algorithm.hash.slice(4);
  switch (algorithm.name) {
    case "HMAC":
      return `HS${bits}`;
    case "RSASSA-PKCS1-v1_5":
      return `RS${bits}`;
    case "RSA-PSS":
      return `PS${bits}`;
    case "RSA-OAEP":
      return bits === "1" ? "RSA-OAEP" : `RSA-OAEP-${bits}`;
    case "AES-GCM":
    case "AES-CBC":
    case "AES-CTR":
      return `A${algorithm.length ?? ""}${algorithm.name.slice(4)}`;
    default:
      return undefined;
  }
}

/**
 * Whether an asymmetric JWK's `alg` fits the import. For RSA keys Node compares only the hash
 * (an RS256 key imports as RSA-PSS with SHA-256), so the sandbox does too.
 */
function jwkAlgFits(alg: unknown, name: string, hash: string | undefined, namedCurve: string | undefined): boolean {
  if (typeof alg !== "string") return false;
  if (hash !== undefined) {
    const bits = /^(?:RS|PS|RSA-OAEP-?)(1|256|384|512)?$/.exec(alg);
    return bits !== null && (bits[1] ?? "1") === hash.slice(4);
  }
  if (name === "ECDSA") return alg === { "P-256": "ES256", "P-384": "ES384", "P-521": "ES512" }[namedCurve ?? ""];
  if (name === "Ed25519") return alg === "EdDSA" || alg === "Ed25519";
  return true;
}

/** The checks WebCrypto makes of any JWK: its kty, use, key_ops and ext against the import asked for. */
function checkJwk(jwk: AnyRecord, kty: string, use: string, extractable: boolean, usages: string[]): void {
  if (jwk["kty"] !== kty) throw domError('Invalid JWK "kty" Parameter', "DataError");
  if (jwk["use"] !== undefined && jwk["use"] !== use) throw domError('Invalid JWK "use" Parameter', "DataError");
  const ops = jwk["key_ops"];
  if (ops !== undefined) {
    if (!Array.isArray(ops)) throw domError('Invalid JWK "key_ops" Parameter', "DataError");
    for (const usage of usages) if (!(ops as unknown[]).includes(usage)) throw domError("Key operations and usage mismatch", "DataError");
  }
  if (jwk["ext"] === false && extractable) throw domError('JWK "ext" Parameter and extractable mismatch', "DataError");
}

function importSecret(
  format: string,
  keyData: unknown,
  name: string,
  algorithm: unknown,
  extractable: boolean,
  usages: string[],
  trusted: boolean,
): CryptoKey {
  checkUsages(name, "secret", usages);
  const derivation = name === "PBKDF2" || name === "HKDF";
  if (derivation && extractable) throw domError(`${name} keys are not extractable`, "SyntaxError");
  const hash = name === "HMAC" ? hashOf(required(algorithm, "hash")) : undefined;
  let bytes: Uint8Array;
  if (format === "raw") bytes = trusted ? (keyData as Uint8Array) : bufferSource(keyData, "keyData", MAX_KEY_BYTES);
  else if (format === "jwk" && !derivation) {
    const jwk = keyData as AnyRecord;
    checkJwk(jwk, "oct", name === "HMAC" ? "sig" : "enc", extractable, usages);
    bytes = fromBase64url(jwk["k"], "k");
    const expected = jwkAlg({ name, hash, length: TypedArrayByteLength(bytes) * 8 } as KeyAlgorithm);
    if (jwk["alg"] !== undefined && jwk["alg"] !== expected)
      throw domError('JWK "alg" does not match the requested algorithm', "DataError");
  } else throw domError(`Unable to import ${name} key with format ${format}`, "NotSupportedError");
  // Unwrapped bytes have not been through bufferSource's bound.
  if (TypedArrayByteLength(bytes) > MAX_KEY_BYTES) throw domError("Invalid keyData", "DataError");
  const bits = TypedArrayByteLength(bytes) * 8;
  let length: number | undefined;
  if (name === "HMAC") {
    const given = integerMember(algorithm, "length", true);
    if (bits === 0 || given === 0) throw domError("Zero-length key is not supported", "DataError");
    if (given !== undefined && given !== bits) throw domError("Invalid key length", "DataError");
    length = bits;
  } else if (!derivation) {
    if (bits !== 128 && bits !== 192 && bits !== 256) throw domError("Invalid key length", "DataError");
    length = bits;
  }
  return makeKey("secret", { name, hash, length } as KeyAlgorithm, extractable, usages, bytes);
}

/** The SubjectPublicKeyInfo of a raw public key: an EC point, or an Ed25519/X25519 key. */
function rawPublicKey(name: string, namedCurve: string | undefined, raw: Uint8Array): Uint8Array {
  if (namedCurve !== undefined) {
    const [, size, oid] = CURVES[namedCurve];
    const compressed = raw.byteLength === size + 1 && (raw[0] === 2 || raw[0] === 3);
    const uncompressed = raw.byteLength === 2 * size + 1 && raw[0] === 4;
    if (!compressed && !uncompressed) throw domError("Invalid keyData", "DataError");
    return der(0x30, concatBytes([der(0x30, concatBytes([EC_PUBLIC_KEY_OID, oid])), der(0x03, concatBytes([Uint8Array.of(0), raw]))]));
  }
  if (raw.byteLength !== 32) throw domError("Invalid keyData", "DataError");
  return der(0x30, concatBytes([der(0x30, OKP_OIDS[name]), der(0x03, concatBytes([Uint8Array.of(0), raw]))]));
}

/** A JWK's members for Node's createPrivateKey/createPublicKey, strings only, as JSON text. */
function jwkText(jwk: AnyRecord, members: string[]): string {
  // No prototype: JSON.stringify would call an Object.prototype.toJSON with the private members.
  const clean = { __proto__: null } as unknown as Record<string, string>;
  for (const member of members) {
    const v = jwk[member];
    if (v === undefined) continue;
    if (typeof v !== "string" || v.length > MAX_KEY_BYTES) throw domError(`Invalid JWK "${member}" Parameter`, "DataError");
    clean[member] = v;
  }
  return stringify(clean);
}

const JWK_MEMBERS: Record<string, string[]> = {
  __proto__: null,
  RSA: ["kty", "n", "e", "d", "p", "q", "dp", "dq", "qi"],
  EC: ["kty", "crv", "x", "y", "d"],
  OKP: ["kty", "crv", "x", "d"],
} as unknown as Record<string, string[]>;

function importAsymmetric(
  format: string,
  keyData: unknown,
  name: string,
  algorithm: unknown,
  extractable: boolean,
  usages: string[],
  trusted: boolean,
): CryptoKey {
  const rsa = RSA.includes(name);
  const hash = rsa ? hashOf(required(algorithm, "hash")) : undefined;
  let namedCurve: string | undefined;
  if (EC.includes(name)) {
    const curve = required(algorithm, "namedCurve");
    if (typeof curve !== "string" || CURVES[curve] === undefined) throw domError("Unrecognized namedCurve", "NotSupportedError");
    namedCurve = curve;
  }
  let args: AnyRecord;
  let type: "public" | "private";
  if (format === "spki" || format === "pkcs8") {
    type = format === "spki" ? "public" : "private";
    args = { kind: type, key: trusted ? keyData : bufferSource(keyData, "keyData", MAX_KEY_BYTES), format: "der", type: format };
  } else if (format === "raw" && !rsa) {
    type = "public";
    args = {
      kind: "public",
      key: rawPublicKey(name, namedCurve, bufferSource(keyData, "keyData", MAX_KEY_BYTES)),
      format: "der",
      type: "spki",
    };
  } else if (format === "jwk") {
    const jwk = keyData as AnyRecord;
    type = jwk["d"] !== undefined ? "private" : "public";
    const kty = rsa ? "RSA" : namedCurve !== undefined ? "EC" : "OKP";
    checkJwk(jwk, kty, name === "RSA-OAEP" || name === "ECDH" || name === "X25519" ? "enc" : "sig", extractable, usages);
    if (kty !== "RSA" && jwk["crv"] !== (namedCurve ?? name))
      throw domError('JWK "crv" does not match the requested algorithm', "DataError");
    if (jwk["alg"] !== undefined && !jwkAlgFits(jwk["alg"], name, hash, namedCurve))
      throw domError('JWK "alg" does not match the requested algorithm', "DataError");
    args = { kind: type, jwk: jwkText(jwk, JWK_MEMBERS[kty]), format: "jwk" };
  } else throw domError(`Unable to import ${name} key with format ${format}`, "NotSupportedError");
  checkUsages(name, type, usages);
  const described = onHost<HostKey>("crypto.createKey", args, "DataError", "Invalid keyData");
  return heldKey(described, name, hash, namedCurve, type === "public" ? true : extractable, usages);
}

/** A CryptoKey of a key the host described, once its type matches the algorithm. */
function heldKey(
  described: HostKey,
  name: string,
  hash: string | undefined,
  namedCurve: string | undefined,
  extractable: boolean,
  usages: string[],
): CryptoKey {
  const keyType = String(described.asymmetricKeyType);
  const details = described.details;
  const expected = RSA.includes(name) ? "rsa" : namedCurve !== undefined ? "ec" : name.toLowerCase();
  if (keyType !== expected && !(name === "RSA-PSS" && keyType === "rsa-pss")) throw domError("Invalid key type", "DataError");
  if (namedCurve !== undefined && details["namedCurve"] !== CURVES[namedCurve][0]) throw domError("Named curve mismatch", "DataError");
  const rsa = expected === "rsa";
  const algorithm = {
    name,
    hash,
    namedCurve,
    modulusLength: rsa ? Number(details["modulusLength"]) : undefined,
    publicExponent: rsa ? String(details["publicExponent"]) : undefined,
  } as KeyAlgorithm;
  return makeKey(described.type, algorithm, extractable, usages, described.der);
}

/**
 * `trusted`: keyData is this module's own (derived bits, an unwrapped key's bytes or its parsed
 * JWK), used without the copies and checks that would show it to replaced built-ins.
 */
function importKey(
  format: unknown,
  keyData: unknown,
  algorithm: unknown,
  extractable: unknown,
  keyUsages: unknown,
  trusted = false,
): CryptoKey {
  if (format !== "raw" && format !== "spki" && format !== "pkcs8" && format !== "jwk")
    throw codedTypeError(`The "format" argument must be one of 'raw', 'pkcs8', 'spki', 'jwk'. Received ${String(format).slice(0, 32)}`);
  if (format === "jwk" && !isRecord(keyData)) throw codedTypeError('The "keyData" argument must be a JSON Web Key object');
  const usages = usageList(keyUsages);
  const name = algorithmName(algorithm, ALGORITHMS.slice(4));
  return SYMMETRIC.includes(name)
    ? importSecret(format, keyData, name, algorithm, Boolean(extractable), usages, trusted)
    : importAsymmetric(format, keyData, name, algorithm, Boolean(extractable), usages, trusted);
}

// --- Export ---------------------------------------------------------------------------------------

function exportKey(format: unknown, slots: Slots): ArrayBuffer | AnyRecord {
  if (format !== "raw" && format !== "spki" && format !== "pkcs8" && format !== "jwk")
    throw codedTypeError(`The "format" argument must be one of 'raw', 'pkcs8', 'spki', 'jwk'. Received ${String(format).slice(0, 32)}`);
  if (!slots.extractable) throw domError("key is not extractable", "InvalidAccessError");
  const { name, type } = slots;
  const unable = () => domError(`Unable to export a ${format} ${name} ${type} key`, "InvalidAccessError");
  if (type === "secret") {
    const secret = slots.secret as Uint8Array;
    if (format === "raw") return arrayBuffer(secret);
    if (format !== "jwk") throw unable();
    return { key_ops: [...slots.usages], ext: true, kty: "oct", k: base64url(secret), alg: jwkAlg(slots) };
  }
  const key = slots.der as Uint8Array;
  if (format === "spki" || format === "pkcs8") {
    if ((format === "spki") !== (type === "public")) throw unable();
    return arrayBuffer(key);
  }
  if (format === "raw") {
    if (type !== "public" || RSA.includes(name)) throw unable();
    // The point (or key) ends the SubjectPublicKeyInfo Node wrote: uncompressed, as WebCrypto exports it.
    const size = slots.namedCurve === undefined ? 32 : 2 * CURVES[slots.namedCurve][1] + 1;
    return arrayBuffer(key.subarray(key.byteLength - size));
  }
  const exported = onHost<{ value: AnyRecord }>(
    "crypto.exportKey",
    { key: keyRef(slots), format: "jwk" },
    "NotSupportedError",
    `Unable to export a ${name} key as a JWK`,
  );
  const jwk: AnyRecord = { key_ops: [...slots.usages], ext: true, ...exported.value };
  const alg = jwkAlg(slots);
  if (RSA.includes(name) && alg !== undefined) jwk["alg"] = alg;
  // Node 20 names Ed25519 keys' algorithm (the later RFC 9864 name), not EdDSA.
  if (name === "Ed25519") jwk["alg"] = "Ed25519";
  return jwk;
}

// --- Sign and verify ------------------------------------------------------------------------------

const SIGNING = ["HMAC", "RSASSA-PKCS1-v1_5", "RSA-PSS", "ECDSA", "Ed25519"];

/** The host's arguments to sign or verify with an asymmetric key as `algorithm` says. */
function signingArgs(name: string, algorithm: unknown, slots: Slots): AnyRecord {
  switch (name) {
    case "RSASSA-PKCS1-v1_5":
      return { key: keyRef(slots), algorithm: nodeHash(slots.hash as string) };
    case "RSA-PSS":
      // RSA_PKCS1_PSS_PADDING
      return {
        key: keyRef(slots),
        algorithm: nodeHash(slots.hash as string),
        padding: 6,
        saltLength: integerMember(algorithm, "saltLength"),
      };
    case "ECDSA":
      return { key: keyRef(slots), algorithm: nodeHash(hashOf(required(algorithm, "hash"))), dsaEncoding: "ieee-p1363" };
    default:
      return { key: keyRef(slots), algorithm: null };
  }
}

function hmac(slots: Slots, data: Uint8Array): Uint8Array {
  return onHost<Uint8Array>(
    "crypto.digest",
    { algorithm: nodeHash(slots.hash as string), key: slots.secret, data },
    "OperationError",
    operationFailed,
  );
}

function sign(algorithm: unknown, key: unknown, data: unknown): ArrayBuffer {
  const name = algorithmName(algorithm, SIGNING);
  const slots = usableKey(key, "key", name, "sign");
  const bytes = bufferSource(data, "data");
  if (name === "HMAC") return arrayBuffer(hmac(slots, bytes));
  return arrayBuffer(
    onHost<Uint8Array>("crypto.sign", { ...signingArgs(name, algorithm, slots), data: bytes }, "OperationError", operationFailed),
  );
}

function verify(algorithm: unknown, key: unknown, signature: unknown, data: unknown): boolean {
  const name = algorithmName(algorithm, SIGNING);
  const slots = usableKey(key, "key", name, "verify");
  const sig = bufferSource(signature, "signature", MAX_KEY_BYTES);
  const bytes = bufferSource(data, "data");
  if (name === "HMAC") {
    // Compared here, index by index: the expected MAC of a verify-only key passes through no method.
    const expected = hmac(slots, bytes);
    if (TypedArrayByteLength(expected) !== sig.byteLength) return false;
    let diff = 0;
    for (let i = 0; i < sig.byteLength; i++) diff |= expected[i] ^ sig[i];
    return diff === 0;
  }
  return onHost<boolean>(
    "crypto.verify",
    { ...signingArgs(name, algorithm, slots), data: bytes, signature: sig },
    "OperationError",
    operationFailed,
  );
}

// --- Encrypt and decrypt --------------------------------------------------------------------------

const CIPHERS = ["AES-GCM", "AES-CBC", "AES-CTR", "RSA-OAEP"];
const GCM_TAG_LENGTHS = [32, 64, 96, 104, 112, 120, 128];

/** The bytes the host answers (an unwrapped key's among them: not copied through any method here). */
function cipher(algorithm: unknown, key: unknown, data: unknown, usage: string, encrypt: boolean): Uint8Array {
  const name = algorithmName(algorithm, CIPHERS);
  const slots = usableKey(key, "key", name, usage);
  const bytes = bufferSource(data, "data");
  if (name === "RSA-OAEP") {
    const label = param(algorithm, "label");
    const args = {
      key: keyRef(slots),
      encrypt,
      hash: nodeHash(slots.hash as string),
      label: label === undefined ? undefined : bufferSource(label, "label"),
      data: bytes,
    };
    return onHost<Uint8Array>("subtle.rsaOaep", args, "OperationError", operationFailed);
  }
  const args: AnyRecord = { mode: name, encrypt, key: slots.secret, data: bytes };
  if (name === "AES-GCM") {
    args["iv"] = bufferSource(required(algorithm, "iv"), "iv");
    const tagLength = integerMember(algorithm, "tagLength", true) ?? 128;
    if (!GCM_TAG_LENGTHS.includes(tagLength)) throw domError(`${tagLength} is not a valid AES-GCM tag length`, "OperationError");
    args["tagLength"] = tagLength;
    const aad = param(algorithm, "additionalData");
    if (aad !== undefined) args["additionalData"] = bufferSource(aad, "additionalData");
  } else if (name === "AES-CBC") {
    args["iv"] = bufferSource(required(algorithm, "iv"), "iv");
    if ((args["iv"] as Uint8Array).byteLength !== 16) throw domError("algorithm.iv must contain exactly 16 bytes", "OperationError");
  } else {
    args["counter"] = bufferSource(required(algorithm, "counter"), "counter");
    if ((args["counter"] as Uint8Array).byteLength !== 16)
      throw domError("algorithm.counter must contain exactly 16 bytes", "OperationError");
    const length = integerMember(algorithm, "length") as number;
    if (length === 0 || length > 128) throw domError("AES-CTR algorithm.length must be between 1 and 128", "OperationError");
    args["length"] = length;
  }
  return onHost<Uint8Array>("subtle.aes", args, "OperationError", operationFailed);
}

// --- Key derivation -------------------------------------------------------------------------------

const DERIVATIONS = ["PBKDF2", "HKDF", "ECDH", "X25519"];

function deriveBits(algorithm: unknown, baseKey: unknown, length: unknown, usage: string): Uint8Array {
  const name = algorithmName(algorithm, DERIVATIONS);
  const slots = usableKey(baseKey, "baseKey", name, usage);
  const bits = length === undefined || length === null ? null : Number(length);
  if (bits !== null && (!Number.isInteger(bits) || bits < 0)) throw codedTypeError('The "length" argument must be a non-negative integer');
  if (name === "PBKDF2" || name === "HKDF") {
    if (bits === null || bits % 8 !== 0) throw domError("length must be a multiple of 8", "OperationError");
    const hash = nodeHash(hashOf(required(algorithm, "hash")));
    const salt = bufferSource(required(algorithm, "salt"), "salt");
    if (name === "HKDF") {
      const info = bufferSource(required(algorithm, "info"), "info");
      return onHost<Uint8Array>(
        "subtle.hkdf",
        { hash, key: slots.secret, salt, info, length: bits / 8 },
        "OperationError",
        operationFailed,
      );
    }
    const iterations = integerMember(algorithm, "iterations") as number;
    if (iterations === 0) throw domError("iterations cannot be zero", "OperationError");
    return onHost<Uint8Array>(
      "subtle.pbkdf2",
      { hash, password: slots.secret, salt, iterations, length: bits / 8 },
      "OperationError",
      operationFailed,
    );
  }
  // ECDH and X25519: `public` is the other party's key, of the same algorithm (and curve).
  const other = slotsOf(required(algorithm, "public"));
  if (other === undefined) throw codedTypeError('The "algorithm.public" property must be an instance of CryptoKey.');
  if (other.type !== "public") throw domError("algorithm.public must be a public key", "InvalidAccessError");
  if (other.name !== name) throw domError("The public and private keys must be of the same type", "InvalidAccessError");
  if (other.namedCurve !== slots.namedCurve) throw domError("Named curve mismatch", "InvalidAccessError");
  const secret = onHost<Uint8Array>(
    "subtle.agree",
    { privateKey: keyRef(slots), publicKey: keyRef(other) },
    "OperationError",
    operationFailed,
  );
  if (bits === null) return secret;
  if (bits > TypedArrayByteLength(secret) * 8) throw domError("derived bit length is too large", "OperationError");
  const out = leading(secret, (bits + 7) >> 3);
  // Bits beyond the length asked for are zero.
  if (bits % 8 !== 0) out[bits >> 3] &= 0xff << (8 - (bits % 8));
  return out;
}

/** The bits a derived key of `algorithm` needs (AES and HMAC keys). */
function derivedKeyLength(algorithm: unknown): number {
  const name = algorithmName(algorithm, ["AES-GCM", "AES-CBC", "AES-CTR", "HMAC"]);
  if (name === "HMAC") {
    const length = integerMember(algorithm, "length", true);
    if (length === 0) throw domError("Zero-length key is not supported", "OperationError");
    return length ?? HASHES[hashOf(required(algorithm, "hash"))][2];
  }
  const length = integerMember(algorithm, "length") as number;
  if (length !== 128 && length !== 192 && length !== 256) throw domError("AES key length must be 128, 192, or 256 bits", "OperationError");
  return length;
}

// --- Key generation -------------------------------------------------------------------------------

interface KeyPair {
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

function generateKey(algorithm: unknown, extractable: unknown, keyUsages: unknown): CryptoKey | KeyPair {
  const name = algorithmName(algorithm, ALGORITHMS.slice(4, -2));
  const usages = usageList(keyUsages);
  const canExtract = Boolean(extractable);
  if (name === "HMAC" || name.startsWith("AES-")) {
    checkUsages(name, "secret", usages);
    const hash = name === "HMAC" ? hashOf(required(algorithm, "hash")) : undefined;
    const length = derivedKeyLength(algorithm);
    if (length % 8 !== 0 || length > MAX_KEY_BYTES * 8)
      throw domError(`The key length must be a multiple of 8 of at most ${MAX_KEY_BYTES * 8} bits`, "OperationError");
    return makeKey("secret", { name, hash, length } as KeyAlgorithm, canExtract, usages, randomKeyBytes(length / 8));
  }
  const allowed = allowedUsages(name);
  for (const usage of usages)
    if (!(allowed.public ?? []).includes(usage) && !(allowed.private ?? []).includes(usage))
      throw domError(`Unsupported key usage for a ${name} key`, "SyntaxError");
  const privateUsages = usages.filter((u) => (allowed.private ?? []).includes(u));
  if (privateUsages.length === 0) throw domError("Usages cannot be empty when creating a key.", "SyntaxError");
  const publicUsages = usages.filter((u) => (allowed.public ?? []).includes(u));
  let args: AnyRecord;
  let hash: string | undefined;
  let namedCurve: string | undefined;
  if (RSA.includes(name)) {
    hash = hashOf(required(algorithm, "hash"));
    const exponent = bufferSource(required(algorithm, "publicExponent"), "publicExponent", 8);
    let e = 0;
    for (let i = 0; i < exponent.byteLength; i++) e = e * 256 + exponent[i];
    args = { kind: "rsa", modulusLength: integerMember(algorithm, "modulusLength"), publicExponent: e };
  } else if (EC.includes(name)) {
    const curve = required(algorithm, "namedCurve");
    if (typeof curve !== "string" || CURVES[curve] === undefined) throw domError("Unrecognized namedCurve", "NotSupportedError");
    namedCurve = curve;
    args = { kind: "ec", namedCurve };
  } else args = { kind: name.toLowerCase() };
  const pair = onHost<{ publicKey: HostKey; privateKey: HostKey }>("subtle.generateKeyPair", args, "OperationError", operationFailed);
  return {
    publicKey: heldKey(pair.publicKey, name, hash, namedCurve, true, publicUsages),
    privateKey: heldKey(pair.privateKey, name, hash, namedCurve, canExtract, privateUsages),
  };
}

// --- SubtleCrypto ---------------------------------------------------------------------------------

function digest(algorithm: unknown, data: unknown): ArrayBuffer {
  const name = algorithmName(algorithm, ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]);
  return arrayBuffer(
    onHost<Uint8Array>("crypto.digest", { algorithm: nodeHash(name), data: bufferSource(data, "data") }, "OperationError", operationFailed),
  );
}

/** WebCrypto's SubtleCrypto: each method answers a Promise, rejected with a DOMException (or a TypeError for a wrong argument). */
export class SubtleCrypto {
  constructor(token?: unknown) {
    if (token !== CONSTRUCTING) throw illegalConstructor();
  }
  async digest(algorithm: unknown, data: unknown): Promise<ArrayBuffer> {
    missingArguments("digest", arguments.length, 2);
    return digest(algorithm, data);
  }
  async importKey(format: unknown, keyData: unknown, algorithm: unknown, extractable: unknown, keyUsages: unknown): Promise<CryptoKey> {
    missingArguments("importKey", arguments.length, 5);
    return importKey(format, keyData, algorithm, extractable, keyUsages);
  }
  async exportKey(format: unknown, key: unknown): Promise<ArrayBuffer | AnyRecord> {
    missingArguments("exportKey", arguments.length, 2);
    return exportKey(format, cryptoKeyArgument(key, "key"));
  }
  async sign(algorithm: unknown, key: unknown, data: unknown): Promise<ArrayBuffer> {
    missingArguments("sign", arguments.length, 3);
    return sign(algorithm, key, data);
  }
  async verify(algorithm: unknown, key: unknown, signature: unknown, data: unknown): Promise<boolean> {
    missingArguments("verify", arguments.length, 4);
    return verify(algorithm, key, signature, data);
  }
  async encrypt(algorithm: unknown, key: unknown, data: unknown): Promise<ArrayBuffer> {
    missingArguments("encrypt", arguments.length, 3);
    return arrayBuffer(cipher(algorithm, key, data, "encrypt", true));
  }
  async decrypt(algorithm: unknown, key: unknown, data: unknown): Promise<ArrayBuffer> {
    missingArguments("decrypt", arguments.length, 3);
    return arrayBuffer(cipher(algorithm, key, data, "decrypt", false));
  }
  async deriveBits(algorithm: unknown, baseKey: unknown, length: unknown): Promise<ArrayBuffer> {
    missingArguments("deriveBits", arguments.length, 2);
    return arrayBuffer(deriveBits(algorithm, baseKey, length, "deriveBits"));
  }
  async deriveKey(
    algorithm: unknown,
    baseKey: unknown,
    derivedKeyAlgorithm: unknown,
    extractable: unknown,
    keyUsages: unknown,
  ): Promise<CryptoKey> {
    missingArguments("deriveKey", arguments.length, 5);
    const bits = deriveBits(algorithm, baseKey, derivedKeyLength(derivedKeyAlgorithm), "deriveKey");
    return importKey("raw", bits, derivedKeyAlgorithm, extractable, keyUsages, true);
  }
  async generateKey(algorithm: unknown, extractable: unknown, keyUsages: unknown): Promise<CryptoKey | KeyPair> {
    missingArguments("generateKey", arguments.length, 3);
    return generateKey(algorithm, extractable, keyUsages);
  }
  /** exportKey, then encrypt with the wrapping key (AES-GCM, AES-CBC, AES-CTR or RSA-OAEP; not AES-KW). */
  async wrapKey(format: unknown, key: unknown, wrappingKey: unknown, wrapAlgorithm: unknown): Promise<ArrayBuffer> {
    missingArguments("wrapKey", arguments.length, 4);
    const exported = exportKey(format, cryptoKeyArgument(key, "key"));
    const bytes = exported instanceof ArrayBuffer ? new Uint8Array(exported) : utf8Encode(stringify(exported));
    return arrayBuffer(cipher(wrapAlgorithm, wrappingKey, bytes, "wrapKey", true));
  }
  /** decrypt with the unwrapping key, then importKey. */
  async unwrapKey(
    format: unknown,
    wrappedKey: unknown,
    unwrappingKey: unknown,
    unwrapAlgorithm: unknown,
    unwrappedKeyAlgorithm: unknown,
    extractable: unknown,
    keyUsages: unknown,
  ): Promise<CryptoKey> {
    missingArguments("unwrapKey", arguments.length, 7);
    if (format !== "raw" && format !== "spki" && format !== "pkcs8" && format !== "jwk")
      throw codedTypeError(`The "format" argument must be one of 'raw', 'pkcs8', 'spki', 'jwk'. Received ${String(format).slice(0, 32)}`);
    const bytes = cipher(unwrapAlgorithm, unwrappingKey, wrappedKey, "unwrapKey", false);
    let keyData: unknown = bytes;
    if (format === "jwk") {
      try {
        keyData = parse(asciiText(bytes));
      } catch {
        throw domError("The unwrapped key is not a JSON Web Key", "DataError");
      }
      if (!isRecord(keyData)) throw domError("The unwrapped key is not a JSON Web Key", "DataError");
      // No inherited member to read: a getter on Object.prototype would be handed the key.
      ObjectSetPrototypeOf(keyData, null);
    }
    return importKey(format, keyData, unwrappedKeyAlgorithm, extractable, keyUsages, true);
  }
  get [Symbol.toStringTag](): string {
    return "SubtleCrypto";
  }
}

export const subtle = new SubtleCrypto(CONSTRUCTING);
