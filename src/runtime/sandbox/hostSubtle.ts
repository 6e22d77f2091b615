// The host side of the isolate's crypto.subtle (isolate/subtle.ts) beyond what hostKeys.ts already
// does (importing, exporting, signing and verifying with asymmetric keys; digests and HMAC are
// hostOperations.ts'): AES ciphers, RSA-OAEP, PBKDF2, HKDF, ECDH/X25519 agreement and key pair
// generation, with Node's synchronous crypto. Like hostKeys.ts this runs outside the isolate's CPU
// timeout, so the work of each call is bounded here: data (64 MiB), PBKDF2 iterations, HKDF output,
// generated RSA moduli (4096 bits). The isolate hands every key back for each call; nothing is kept.
import crypto from "node:crypto";
import { codedError, describeKey, heldKey, MAX_GENERATED_MODULUS_BITS, MAX_KEY_BYTES, tooLarge } from "./hostKeys.js";

type Args = Record<string, unknown>;

const MAX_DATA_BYTES = 64 * 1024 * 1024;
/** PBKDF2 iterations per call, as for the keys hostKeys.ts decrypts. */
const MAX_PBKDF2_ITERATIONS = 1_000_000;
/** Iterations times output blocks: 1,000,000 iterations still give two blocks (an AES-256 key and an HMAC key from SHA-256). */
const MAX_PBKDF2_WORK = 2_000_000;
const HASH_BYTES: Record<string, number> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 };
const CURVES = new Set(["P-256", "P-384", "P-521"]);

function bytes(v: unknown, name: string, max = MAX_DATA_BYTES): Uint8Array {
  if (!(v instanceof Uint8Array)) throw codedError(TypeError, `The "${name}" argument must be bytes`, "ERR_INVALID_ARG_TYPE");
  if (v.byteLength > max) throw tooLarge(name, v.byteLength, max, "bytes");
  return v;
}

function optionalBytes(v: unknown, name: string, max = MAX_DATA_BYTES): Uint8Array | undefined {
  return v === undefined || v === null ? undefined : bytes(v, name, max);
}

function integer(v: unknown, name: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v))
    throw codedError(TypeError, `The "${name}" argument must be an integer`, "ERR_INVALID_ARG_TYPE");
  if (v < min || v > max)
    throw codedError(
      RangeError,
      `The ${name} is ${v}; the Headwater sandbox takes ${min} to ${max} (host-side work is bounded)`,
      "ERR_OUT_OF_RANGE",
    );
  return v;
}

function hashName(v: unknown): string {
  if (typeof v !== "string" || HASH_BYTES[v] === undefined)
    throw codedError(TypeError, `Unsupported hash ${String(v).slice(0, 32)}`, "ERR_INVALID_ARG_VALUE");
  return v;
}

function aesKey(v: unknown): Uint8Array {
  const key = bytes(v, "key", 32);
  if (key.byteLength !== 16 && key.byteLength !== 24 && key.byteLength !== 32)
    throw codedError(RangeError, "Invalid AES key length", "ERR_CRYPTO_INVALID_KEYLEN");
  return key;
}

function run(cipher: crypto.Cipher | crypto.Decipher, data: Uint8Array): Buffer {
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

/**
 * AES-CTR with WebCrypto's `length`: only the counter block's rightmost `length` bits count, and
 * they wrap to zero without carrying into the rest (OpenSSL carries through all 128 bits), so the
 * blocks after the wrap are a second run from the block with those bits cleared.
 */
function aesCtr(key: Uint8Array, counter: Uint8Array, length: number, data: Uint8Array): Buffer {
  const name = `aes-${key.byteLength * 8}-ctr`;
  const block = BigInt(`0x${Buffer.from(counter).toString("hex")}`);
  const mask = (1n << BigInt(length)) - 1n;
  const blocks = BigInt(Math.ceil(data.byteLength / 16));
  if (blocks > mask + 1n) throw new Error("The AES-CTR counter would repeat for this much data");
  const beforeWrap = mask + 1n - (block & mask);
  if (blocks <= beforeWrap) return run(crypto.createCipheriv(name, key, counter), data);
  const split = Number(beforeWrap) * 16;
  const wrapped = Buffer.from((block & ~mask).toString(16).padStart(32, "0"), "hex");
  return Buffer.concat([
    run(crypto.createCipheriv(name, key, counter), data.subarray(0, split)),
    run(crypto.createCipheriv(name, key, wrapped), data.subarray(split)),
  ]);
}

function aes(a: Args): Uint8Array {
  const key = aesKey(a["key"]);
  const data = bytes(a["data"], "data");
  const encrypt = a["encrypt"] === true;
  const bits = key.byteLength * 8;
  switch (a["mode"]) {
    case "AES-CBC": {
      const iv = bytes(a["iv"], "iv", 16);
      if (iv.byteLength !== 16) throw codedError(RangeError, "algorithm.iv must contain exactly 16 bytes", "ERR_CRYPTO_INVALID_IV");
      const name = `aes-${bits}-cbc`;
      return run(encrypt ? crypto.createCipheriv(name, key, iv) : crypto.createDecipheriv(name, key, iv), data);
    }
    case "AES-CTR": {
      const counter = bytes(a["counter"], "counter", 16);
      if (counter.byteLength !== 16)
        throw codedError(RangeError, "algorithm.counter must contain exactly 16 bytes", "ERR_CRYPTO_INVALID_IV");
      return aesCtr(key, counter, integer(a["length"], "length", 1, 128), data);
    }
    case "AES-GCM": {
      const iv = bytes(a["iv"], "iv");
      if (iv.byteLength === 0) throw codedError(RangeError, "algorithm.iv must not be empty", "ERR_CRYPTO_INVALID_IV");
      const tagBytes = integer(a["tagLength"], "tagLength", 32, 128) / 8;
      const aad = optionalBytes(a["additionalData"], "additionalData");
      const name = `aes-${bits}-gcm` as crypto.CipherGCMTypes;
      if (encrypt) {
        const cipher = crypto.createCipheriv(name, key, iv, { authTagLength: tagBytes });
        if (aad !== undefined) cipher.setAAD(aad);
        const body = run(cipher, data);
        return Buffer.concat([body, cipher.getAuthTag()]);
      }
      if (data.byteLength < tagBytes) throw new Error("The data is shorter than the authentication tag");
      const decipher = crypto.createDecipheriv(name, key, iv, { authTagLength: tagBytes });
      if (aad !== undefined) decipher.setAAD(aad);
      decipher.setAuthTag(data.subarray(data.byteLength - tagBytes));
      return run(decipher, data.subarray(0, data.byteLength - tagBytes));
    }
    default:
      throw codedError(TypeError, "Unsupported AES mode", "ERR_INVALID_ARG_VALUE");
  }
}

function rsaOaep(a: Args): Uint8Array {
  const key = heldKey(a["key"]);
  if (key.asymmetricKeyType !== "rsa") throw codedError(TypeError, "RSA-OAEP takes an RSA key", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
  const options = {
    key,
    padding: crypto.constants.RSA_PKCS1_OAEP_PADDING,
    oaepHash: hashName(a["hash"]),
    oaepLabel: optionalBytes(a["label"], "label"),
  };
  const data = bytes(a["data"], "data", MAX_KEY_BYTES);
  if (a["encrypt"] === true) {
    if (key.type !== "public") throw codedError(TypeError, "RSA-OAEP encrypts with a public key", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
    return crypto.publicEncrypt(options, data);
  }
  if (key.type !== "private") throw codedError(TypeError, "RSA-OAEP decrypts with a private key", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
  return crypto.privateDecrypt(options, data);
}

function pbkdf2(a: Args): Uint8Array {
  const hash = hashName(a["hash"]);
  const iterations = integer(a["iterations"], "iteration count", 1, MAX_PBKDF2_ITERATIONS);
  const length = integer(a["length"], "derived length in bytes", 0, 1024 * 1024);
  const blocks = Math.ceil(length / HASH_BYTES[hash]);
  if (iterations * blocks > MAX_PBKDF2_WORK)
    throw codedError(
      RangeError,
      `PBKDF2 of ${iterations} iterations for ${length} bytes of ${hash} is ${iterations * blocks} rounds; the Headwater sandbox takes at most ${MAX_PBKDF2_WORK} (host-side work is bounded)`,
      "ERR_OUT_OF_RANGE",
    );
  return crypto.pbkdf2Sync(bytes(a["password"], "password"), bytes(a["salt"], "salt"), iterations, length, hash);
}

function hkdf(a: Args): Uint8Array {
  const hash = hashName(a["hash"]);
  // HKDF's own limit (RFC 5869): 255 blocks of the hash.
  const length = integer(a["length"], "derived length in bytes", 0, 255 * HASH_BYTES[hash]);
  const info = bytes(a["info"], "info", 1024);
  return new Uint8Array(crypto.hkdfSync(hash, bytes(a["key"], "key"), bytes(a["salt"], "salt"), info, length));
}

function agree(a: Args): Uint8Array {
  const privateKey = heldKey(a["privateKey"]);
  const publicKey = heldKey(a["publicKey"]);
  if (privateKey.type !== "private" || publicKey.type !== "public")
    throw codedError(TypeError, "Key agreement takes a private and a public key", "ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE");
  return crypto.diffieHellman({ privateKey, publicKey });
}

function generateKeyPair(a: Args) {
  let pair: crypto.KeyPairKeyObjectResult;
  switch (a["kind"]) {
    case "rsa":
      pair = crypto.generateKeyPairSync("rsa", {
        modulusLength: integer(a["modulusLength"], "modulus length in bits", 512, MAX_GENERATED_MODULUS_BITS),
        publicExponent: integer(a["publicExponent"], "public exponent", 3, 2 ** 32 - 1),
      });
      break;
    case "ec": {
      const namedCurve = a["namedCurve"];
      if (typeof namedCurve !== "string" || !CURVES.has(namedCurve))
        throw codedError(TypeError, "Unsupported named curve", "ERR_INVALID_ARG_VALUE");
      pair = crypto.generateKeyPairSync("ec", { namedCurve });
      break;
    }
    case "ed25519":
      pair = crypto.generateKeyPairSync("ed25519");
      break;
    case "x25519":
      pair = crypto.generateKeyPairSync("x25519");
      break;
    default:
      throw codedError(TypeError, "Unsupported key pair type", "ERR_INVALID_ARG_VALUE");
  }
  return { publicKey: describeKey(pair.publicKey), privateKey: describeKey(pair.privateKey) };
}

/** The crypto.subtle host operations; undefined for an operation that is not one. */
export function subtleOperation(op: string, a: Args): { value: unknown } | undefined {
  switch (op) {
    case "subtle.aes":
      return { value: new Uint8Array(aes(a)) };
    case "subtle.rsaOaep":
      return { value: new Uint8Array(rsaOaep(a)) };
    case "subtle.pbkdf2":
      return { value: new Uint8Array(pbkdf2(a)) };
    case "subtle.hkdf":
      return { value: hkdf(a) };
    case "subtle.agree":
      return { value: new Uint8Array(agree(a)) };
    case "subtle.generateKeyPair":
      return { value: generateKeyPair(a) };
    default:
      return undefined;
  }
}
