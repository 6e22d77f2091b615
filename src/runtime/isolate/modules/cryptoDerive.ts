// Node's pbkdf2, scrypt and hkdf, each one bounded host call (sandbox/hostDerive.ts). Numbers and
// strings go to the host as given, where node:crypto checks them with its own errors; only
// objects, which cannot be, are refused here in Node's words. The asynchronous forms compute at
// once and call back after this turn; bad arguments throw at the call, as Node's do.
import { Buffer } from "buffer";
import { hostSync } from "../bridge.js";
import { secretKeyInput } from "./crypto.js";
import { binaryLike, checkCallback, invalidType, later } from "./cryptoArgs.js";

/** A number or string argument: an object is refused here, any other value is the host's to check. */
function primitive(value: unknown, name: string, type: string): unknown {
  if ((typeof value === "object" && value !== null) || typeof value === "function") throw invalidType(name, `of type ${type}`, value);
  return value;
}

function pbkdf2Bytes(password: unknown, salt: unknown, iterations: unknown, keylen: unknown, digest: unknown): Buffer {
  const derived = hostSync<Uint8Array>("crypto.pbkdf2", {
    digest: primitive(digest, "digest", "string"),
    password: binaryLike(password, "password"),
    salt: binaryLike(salt, "salt"),
    iterations: primitive(iterations, "iterations", "number"),
    keylen: primitive(keylen, "keylen", "number"),
  });
  return Buffer.from(derived);
}

export function pbkdf2Sync(password: unknown, salt: unknown, iterations: unknown, keylen: unknown, digest: unknown): Buffer {
  return pbkdf2Bytes(password, salt, iterations, keylen, digest);
}

export function pbkdf2(password: unknown, salt: unknown, iterations: unknown, keylen: unknown, digest: unknown, callback?: unknown): void {
  const cb = checkCallback(callback);
  later(cb, pbkdf2Bytes(password, salt, iterations, keylen, digest));
}

const SCRYPT_OPTIONS = ["N", "r", "p", "cost", "blockSize", "parallelization", "maxmem"];

function scryptBytes(password: unknown, salt: unknown, keylen: unknown, options: unknown): Buffer {
  let given: Record<string, unknown> | undefined;
  if (options !== undefined && options !== null) {
    if (typeof options !== "object") throw invalidType("options", "of type object", options);
    given = {};
    for (const name of SCRYPT_OPTIONS) {
      const v = (options as Record<string, unknown>)[name];
      if (v !== undefined) given[name] = primitive(v, name, "number");
    }
  }
  const derived = hostSync<Uint8Array>("crypto.scrypt", {
    password: binaryLike(password, "password"),
    salt: binaryLike(salt, "salt"),
    keylen: primitive(keylen, "keylen", "number"),
    options: given,
  });
  return Buffer.from(derived);
}

export function scryptSync(password: unknown, salt: unknown, keylen: unknown, options?: unknown): Buffer {
  return scryptBytes(password, salt, keylen, options);
}

/** scrypt(password, salt, keylen[, options], callback). */
export function scrypt(password: unknown, salt: unknown, keylen: unknown, options?: unknown, callback?: unknown): void {
  if (typeof options === "function") [options, callback] = [undefined, options];
  const cb = checkCallback(callback);
  later(cb, scryptBytes(password, salt, keylen, options));
}

function hkdfBytes(digest: unknown, ikm: unknown, salt: unknown, info: unknown, keylen: unknown): ArrayBuffer {
  const derived = hostSync<Uint8Array>("crypto.hkdf", {
    digest: primitive(digest, "digest", "string"),
    ikm: secretKeyInput(ikm, "ikm", "of type string or an instance of SecretKeyObject, ArrayBuffer, TypedArray, DataView, or Buffer"),
    salt: binaryLike(salt, "salt"),
    info: binaryLike(info, "info"),
    keylen: primitive(keylen, "keylen", "number"),
  });
  // Node's hkdf gives an ArrayBuffer, not a Buffer.
  return Uint8Array.from(derived).buffer;
}

export function hkdfSync(digest: unknown, ikm: unknown, salt: unknown, info: unknown, keylen: unknown): ArrayBuffer {
  return hkdfBytes(digest, ikm, salt, info, keylen);
}

export function hkdf(digest: unknown, ikm: unknown, salt: unknown, info: unknown, keylen: unknown, callback?: unknown): void {
  const cb = checkCallback(callback);
  later(cb, hkdfBytes(digest, ikm, salt, info, keylen));
}
