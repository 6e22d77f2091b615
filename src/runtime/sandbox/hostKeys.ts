// Asymmetric keys and signatures for the isolate's crypto module, run with node:crypto in the
// runner child. This work runs on the child's main thread, outside the isolate's CPU timeout,
// so every input is bounded: key material (64 KiB), RSA and DSA moduli (8192 bits), the work
// factor of a passphrase-encrypted key, and the data signed (as digests). The isolate holds a key
// as its DER (PKCS#8 or SPKI) and hands it back for each use; the host never keeps state.
import crypto from "node:crypto";
import { KEY_PAIR_OPTIONS } from "../rules.js";

export const MAX_KEY_BYTES = 64 * 1024;
export const MAX_MODULUS_BITS = 8192;
const MAX_SIGNED_BYTES = 64 * 1024 * 1024;
/** PBKDF2 (and PKCS#12, PBES1) iterations of an encrypted key; OpenSSL writes 2048. */
const MAX_KDF_ITERATIONS = 1_000_000;
/** scrypt's N·r·p of an encrypted key (OpenSSL also caps its memory at 32 MB). */
const MAX_SCRYPT_WORK = 2 ** 22;

type Args = Record<string, unknown>;

/** An error as Node's crypto raises them: a class and a `code` the isolate rebuilds. */
export function codedError(ctor: ErrorConstructor | TypeErrorConstructor | RangeErrorConstructor, message: string, code: string): Error {
  return Object.assign(new ctor(message), { code });
}

export function tooLarge(what: string, size: number, max: number, unit: string): Error {
  return codedError(
    RangeError,
    `The ${what} is ${size} ${unit}; the Headwater sandbox takes at most ${max} ${unit} (host-side work is bounded)`,
    "ERR_OUT_OF_RANGE",
  );
}

function boundedString(v: unknown, max: number, name: string): string {
  if (typeof v !== "string") throw codedError(TypeError, `The "${name}" argument must be of type string`, "ERR_INVALID_ARG_TYPE");
  if (v.length > max) throw tooLarge(name, v.length, max, "characters");
  return v;
}

function optionalString(v: unknown, max: number, name: string): string | undefined {
  return v === undefined || v === null ? undefined : boundedString(v, max, name);
}

function keyBytes(v: unknown, name = "key"): Uint8Array {
  if (!(v instanceof Uint8Array)) throw codedError(TypeError, `The "${name}" argument must be bytes`, "ERR_INVALID_ARG_TYPE");
  if (v.byteLength > MAX_KEY_BYTES) throw tooLarge(name, v.byteLength, MAX_KEY_BYTES, "bytes");
  return v;
}

function keyMaterial(v: unknown): string | Uint8Array {
  return typeof v === "string" ? boundedString(v, MAX_KEY_BYTES, "key") : keyBytes(v);
}

function passphrase(v: unknown): string | Uint8Array | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return boundedString(v, 1024, "passphrase");
  if (v instanceof Uint8Array && v.byteLength <= 1024) return v;
  throw codedError(TypeError, 'The "passphrase" must be a string or bytes of at most 1024', "ERR_INVALID_ARG_TYPE");
}

// --- The work factor of passphrase-encrypted keys -------------------------------------------

const PKCS5 = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05]; // 1.2.840.113549.1.5
const PKCS12_PBE = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01]; // 1.2.840.113549.1.12.1
const SCRYPT = [0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x04, 0x0b]; // 1.3.6.1.4.1.11591.4.11

/** A DER element at `at`: its tag, where its contents start and end; undefined if it does not fit. */
function element(der: Uint8Array, at: number): { tag: number; start: number; end: number } | undefined {
  if (at + 2 > der.length) return undefined;
  const tag = der[at];
  let len = der[at + 1];
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 3 || start + n > der.length) return undefined;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[start + i];
    start += n;
  }
  return start + len <= der.length ? { tag, start, end: start + len } : undefined;
}

/** The INTEGERs directly inside the SEQUENCE at `at` (salt and other elements skipped). */
function integersOf(der: Uint8Array, at: number): number[] | undefined {
  const seq = element(der, at);
  if (seq === undefined || seq.tag !== 0x30) return undefined;
  const out: number[] = [];
  for (let p = seq.start; p < seq.end;) {
    const e = element(der, p);
    if (e === undefined || e.end > seq.end) return undefined;
    if (e.tag === 0x02) {
      if (e.end - e.start > 6) return [Infinity];
      let v = 0;
      for (let i = e.start; i < e.end; i++) v = v * 256 + der[i];
      out.push(v);
    }
    p = e.end;
  }
  return out;
}

function startsWith(der: Uint8Array, at: number, prefix: number[]): boolean {
  for (let i = 0; i < prefix.length; i++) if (der[at + i] !== prefix[i]) return false;
  return true;
}

/**
 * Refuses an encrypted key whose decryption would cost more than a bounded key derivation: every
 * password-based encryption or KDF identifier in it must be followed by parameters read here, with
 * iterations (PBKDF2, PBES1, PKCS#12) or scrypt's work within bounds.
 */
function checkKeyDerivation(der: Uint8Array): void {
  const refuse = (why: string) =>
    codedError(
      Error,
      `The encrypted key is refused: ${why} (the Headwater sandbox bounds the work of decrypting a key)`,
      "ERR_OUT_OF_RANGE",
    );
  for (let at = 0; at + 2 < der.length; at++) {
    if (der[at] !== 0x06) continue;
    const oid = element(der, at);
    if (oid === undefined) continue;
    const body = der.subarray(oid.start, oid.end);
    const pkcs5 = body.length === PKCS5.length + 1 && startsWith(body, 0, PKCS5);
    // PBES2 (13) only wraps a KDF and a cipher, each checked on its own.
    const kdf = (pkcs5 && body[PKCS5.length] !== 13) || (body.length === PKCS12_PBE.length + 1 && startsWith(body, 0, PKCS12_PBE));
    const scrypt = body.length === SCRYPT.length && startsWith(body, 0, SCRYPT);
    if (!kdf && !scrypt) continue;
    const ints = integersOf(der, oid.end);
    if (ints === undefined || ints.length === 0) throw refuse("its key derivation parameters could not be read");
    if (kdf && ints[0] > MAX_KDF_ITERATIONS) throw refuse(`${ints[0]} iterations, more than ${MAX_KDF_ITERATIONS}`);
    if (scrypt && (ints.length < 3 || ints[0] * ints[1] * ints[2] > MAX_SCRYPT_WORK)) throw refuse("its scrypt cost is too high");
  }
}

/** The DER inside key material: the bytes themselves and each PEM block's body. */
function derBlobs(key: string | Uint8Array): Uint8Array[] {
  const text = typeof key === "string" ? key : Buffer.from(key).toString("latin1");
  // The bytes themselves always: DER may hold text that looks like PEM.
  const blobs: Uint8Array[] = [typeof key === "string" ? Buffer.from(key, "latin1") : key];
  for (const m of text.matchAll(/-----BEGIN [^-]*-----([\s\S]*?)(?:-----END|$)/g)) {
    const body = m[1]
      .split(/\r?\n/)
      .filter((line) => !line.includes(":"))
      .join("");
    blobs.push(Buffer.from(body, "base64"));
  }
  return blobs;
}

// --- Keys ----------------------------------------------------------------------------------------

function checkKeySize(key: crypto.KeyObject): crypto.KeyObject {
  const bits = key.asymmetricKeyDetails?.modulusLength;
  if (bits !== undefined && bits > MAX_MODULUS_BITS)
    throw codedError(
      RangeError,
      `The ${key.asymmetricKeyType ?? ""} key's modulus is ${bits} bits; the Headwater sandbox takes keys of at most ${MAX_MODULUS_BITS} bits (host-side work is bounded)`,
      "ERR_OUT_OF_RANGE",
    );
  return key;
}

/** A key as the isolate holds it: its type, what Node says of it, and its DER (PKCS#8 or SPKI). */
export function describeKey(key: crypto.KeyObject) {
  checkKeySize(key);
  const details: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(key.asymmetricKeyDetails ?? {}))
    if (typeof value === "bigint") details[name] = value.toString();
    else if (typeof value === "string" || typeof value === "number") details[name] = value;
  const der = key.type === "private" ? key.export({ format: "der", type: "pkcs8" }) : key.export({ format: "der", type: "spki" });
  return { type: key.type, asymmetricKeyType: key.asymmetricKeyType, details, der: new Uint8Array(der) };
}

/** The key the isolate hands back (as describeKey gave it), checked again: the isolate is not trusted. */
export function heldKey(v: unknown): crypto.KeyObject {
  const a = (typeof v === "object" && v !== null ? v : {}) as Args;
  const der = keyBytes(a["der"]);
  const key =
    a["type"] === "private"
      ? crypto.createPrivateKey({ key: Buffer.from(der), format: "der", type: "pkcs8" })
      : a["type"] === "public"
        ? crypto.createPublicKey({ key: Buffer.from(der), format: "der", type: "spki" })
        : undefined;
  if (key === undefined) throw codedError(TypeError, "Invalid KeyObject", "ERR_INVALID_ARG_TYPE");
  return checkKeySize(key);
}

/** createPrivateKey / createPublicKey from material (PEM, DER, JWK as JSON text) or from a held private key. */
function createKey(a: Args) {
  const kind = a["kind"];
  if (a["from"] !== undefined) {
    const from = heldKey(a["from"]);
    if (kind !== "public" || from.type !== "private")
      throw codedError(TypeError, `Invalid key object type ${from.type}, expected private.`, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
    return describeKey(crypto.createPublicKey(from));
  }
  const format = optionalString(a["format"], 8, "format");
  const type = optionalString(a["type"], 8, "type");
  let input: crypto.PrivateKeyInput | crypto.JsonWebKeyInput;
  if (format === "jwk") {
    const jwk: unknown = JSON.parse(boundedString(a["jwk"], MAX_KEY_BYTES, "key"));
    if (jwk === null || typeof jwk !== "object" || Array.isArray(jwk))
      throw codedError(TypeError, 'The "key.key" property must be of type object.', "ERR_INVALID_ARG_TYPE");
    input = { key: jwk as crypto.JsonWebKey, format: "jwk" };
  } else {
    const key = keyMaterial(a["key"]);
    for (const der of derBlobs(key)) checkKeyDerivation(der);
    input = {
      key: typeof key === "string" ? key : Buffer.from(key),
      format: format as "pem" | "der" | undefined,
      type: type as "pkcs1" | "pkcs8" | "sec1" | undefined,
      passphrase: passphrase(a["passphrase"]) as string | Buffer | undefined,
    };
  }
  if (kind === "private") return describeKey(crypto.createPrivateKey(input));
  if (kind === "public") return describeKey(crypto.createPublicKey(input as crypto.PublicKeyInput));
  throw codedError(TypeError, "unknown key kind", "ERR_INVALID_ARG_VALUE");
}

function exportKey(a: Args): { format: string; value: unknown } {
  const key = heldKey(a["key"]);
  const format = optionalString(a["format"], 8, "format");
  const cipher = optionalString(a["cipher"], 64, "cipher");
  const options = {
    format,
    type: optionalString(a["type"], 8, "type"),
    ...(cipher === undefined ? {} : { cipher, passphrase: passphrase(a["passphrase"]) }),
  } as crypto.KeyExportOptions<"pem">;
  const value: unknown = key.export(options as never);
  return { format: format ?? "", value: value instanceof Uint8Array ? new Uint8Array(value) : value };
}

function signingOptions(a: Args, key: crypto.KeyObject) {
  const number = (name: string) => {
    const v = a[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number")
      throw codedError(TypeError, `The "options.${name}" property must be of type number.`, "ERR_INVALID_ARG_TYPE");
    return v;
  };
  const dsaEncoding = optionalString(a["dsaEncoding"], 16, "dsaEncoding") as "der" | "ieee-p1363" | undefined;
  const options: crypto.SignKeyObjectInput = { key };
  const padding = number("padding");
  const saltLength = number("saltLength");
  if (padding !== undefined) options.padding = padding;
  if (saltLength !== undefined) options.saltLength = saltLength;
  if (dsaEncoding !== undefined) options.dsaEncoding = dsaEncoding;
  return options;
}

function signAlgorithm(v: unknown): string | null {
  return v === null || v === undefined ? null : boundedString(v, 64, "algorithm");
}

function signedData(v: unknown): Uint8Array {
  if (!(v instanceof Uint8Array)) throw codedError(TypeError, 'The "data" argument must be bytes', "ERR_INVALID_ARG_TYPE");
  if (v.byteLength > MAX_SIGNED_BYTES) throw tooLarge("data", v.byteLength, MAX_SIGNED_BYTES, "bytes");
  return v;
}

// --- Key generation ----------------------------------------------------------------------------

/** RSA moduli generated here: a 4096-bit key takes about a second; larger ones take many. */
export const MAX_GENERATED_MODULUS_BITS = 4096;

/** An encoding option as Node reads it: strings (and a passphrase's bytes) only. */
function encoding(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  const o = v as Args;
  const out: Args = {};
  for (const name of ["format", "type", "cipher"]) if (o[name] !== undefined) out[name] = o[name];
  if (o["passphrase"] !== undefined) {
    const p = o["passphrase"];
    out["passphrase"] = p instanceof Uint8Array ? Buffer.from(passphrase(p) as Uint8Array) : passphrase(p);
  }
  return out;
}

/** generateKeyPairSync: Node checks the type and options; the moduli and types are bounded first. */
function generateKeyPair(a: Args) {
  const type = a["type"];
  const given = (typeof a["options"] === "object" && a["options"] !== null ? a["options"] : undefined) as Args | undefined;
  // DSA and DH parameters take many seconds to generate; other unknown types are Node's to refuse.
  if (type === "dsa" || type === "dh")
    throw codedError(
      Error,
      `Generating ${type} keys is not available in the Headwater sandbox (rsa, rsa-pss, ec, ed25519, ed448, x25519 and x448 are)`,
      "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM",
    );
  const bits = given?.["modulusLength"];
  if (typeof bits === "number" && bits > MAX_GENERATED_MODULUS_BITS)
    throw codedError(
      RangeError,
      `The modulusLength is ${bits} bits; the Headwater sandbox generates keys of at most ${MAX_GENERATED_MODULUS_BITS} bits (host-side work is bounded)`,
      "ERR_OUT_OF_RANGE",
    );
  let options: Args | undefined;
  if (given !== undefined) {
    options = {};
    for (const name of KEY_PAIR_OPTIONS) if (given[name] !== undefined) options[name] = given[name];
    options["publicKeyEncoding"] = encoding(given["publicKeyEncoding"]);
    options["privateKeyEncoding"] = encoding(given["privateKeyEncoding"]);
  }
  const generate = crypto.generateKeyPairSync as (type: unknown, options: unknown) => { publicKey: unknown; privateKey: unknown };
  const pair = generate(type, options ?? a["options"]);
  const side = (key: unknown) => {
    if (key instanceof crypto.KeyObject) return { key: describeKey(key) };
    if (typeof key === "string") return { value: key };
    if (key instanceof Uint8Array) return { value: new Uint8Array(key) };
    return { jwk: JSON.stringify(key) };
  };
  return { publicKey: side(pair.publicKey), privateKey: side(pair.privateKey) };
}

// --- Diffie-Hellman -----------------------------------------------------------------------------

/** createECDH's operations, on raw keys the isolate holds and hands over: one EC point multiplication at most. */
function ecdh(a: Args): unknown {
  const action = a["action"];
  if (action === "curves") return crypto.getCurves();
  const curve = boundedString(a["curve"], 64, "curve");
  const raw = (name: string) => Buffer.from(keyBytes(a[name], name));
  switch (action) {
    case "check":
      crypto.createECDH(curve);
      return true;
    case "convert":
      return new Uint8Array(
        crypto.ECDH.convertKey(
          raw("key"),
          curve,
          undefined,
          undefined,
          optionalString(a["format"], 16, "format") as "compressed",
        ) as Buffer,
      );
    case "generate":
    case "setPrivate": {
      const e = crypto.createECDH(curve);
      if (action === "generate") e.generateKeys();
      else e.setPrivateKey(raw("privateKey"));
      return { privateKey: new Uint8Array(e.getPrivateKey()), publicKey: new Uint8Array(e.getPublicKey()) };
    }
    case "compute": {
      const e = crypto.createECDH(curve);
      e.setPrivateKey(raw("privateKey"));
      return new Uint8Array(e.computeSecret(raw("key")));
    }
    default:
      throw codedError(TypeError, "unknown ECDH action", "ERR_INVALID_ARG_VALUE");
  }
}

/** crypto.diffieHellman of two held keys (x25519, x448, ec, dh): Node checks their types and curves. */
function diffieHellman(a: Args): Uint8Array {
  const privateKey = heldKey(a["privateKey"]);
  const publicKey = heldKey(a["publicKey"]);
  return new Uint8Array(crypto.diffieHellman({ privateKey, publicKey }));
}

/** The crypto host operations on asymmetric keys; undefined for an operation that is not one. */
export function keyOperation(op: string, a: Args): { value: unknown } | undefined {
  switch (op) {
    case "crypto.createKey":
      return { value: createKey(a) };
    case "crypto.generateKeyPair":
      return { value: generateKeyPair(a) };
    case "crypto.ecdh":
      return { value: ecdh(a) };
    case "crypto.diffieHellman":
      return { value: diffieHellman(a) };
    case "crypto.exportKey":
      return { value: exportKey(a) };
    case "crypto.keyEquals": {
      const [x, y] = [heldKey(a["a"]), heldKey(a["b"])];
      // Node 20's equals of keys of two types leaves OpenSSL's "different key types" queued, and
      // the child's next key parse (any isolate's) fails with it: such keys differ anyway.
      return { value: x.type === y.type && x.asymmetricKeyType === y.asymmetricKeyType && x.equals(y) };
    }
    case "crypto.signCheck":
      // Node's createSign fails at once on an unknown digest.
      crypto.createSign(boundedString(a["algorithm"], 64, "algorithm"));
      return { value: true };
    case "crypto.sign": {
      const key = heldKey(a["key"]);
      if (key.type !== "private")
        throw codedError(TypeError, `Invalid key object type ${key.type}, expected private.`, "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
      const signature = crypto.sign(signAlgorithm(a["algorithm"]), signedData(a["data"]), signingOptions(a, key));
      return { value: new Uint8Array(signature) };
    }
    case "crypto.verify": {
      const key = heldKey(a["key"]);
      const signature = keyBytes(a["signature"], "signature");
      return { value: crypto.verify(signAlgorithm(a["algorithm"]), signedData(a["data"]), signingOptions(a, key), signature) };
    }
    default:
      return undefined;
  }
}
