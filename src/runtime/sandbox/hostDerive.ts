// Key derivation for the isolate's crypto module (pbkdf2, scrypt, hkdf), run with node:crypto in
// the runner child, outside the isolate's CPU timeout: so the work each call may ask for is
// bounded here, before node:crypto starts it. Within the bounds node:crypto checks every argument
// itself (the isolate passes numbers and strings through as given), so its errors are Node's.
import crypto from "node:crypto";

/** PBKDF2 iterations, as for a passphrase-encrypted key (hostKeys.ts). */
export const MAX_PBKDF2_ITERATIONS = 1_000_000;
/** PBKDF2's whole work: iterations times the digest blocks of the key asked for. */
export const MAX_PBKDF2_WORK = 4 * MAX_PBKDF2_ITERATIONS;
/** scrypt's N·r·p, as for an encrypted key. */
export const MAX_SCRYPT_WORK = 2 ** 22;
/** The memory scrypt needs (128·N·r plus 128·r·p bytes), whatever `maxmem` allows. */
export const MAX_SCRYPT_MEMORY = 64 * 1024 * 1024;
/** The bytes of a derived key. */
export const MAX_DERIVED_BYTES = 64 * 1024;
const MAX_INPUT_BYTES = 1024 * 1024;

type Args = Record<string, unknown>;

function refuse(message: string): Error {
  return Object.assign(new RangeError(`${message} (the Headwater sandbox bounds the work of deriving a key)`), {
    code: "ERR_OUT_OF_RANGE",
  });
}

/** Bytes or a string as given; anything else goes to node:crypto, which refuses it with its own message. */
function input(v: unknown, name: string): unknown {
  const size = v instanceof Uint8Array ? v.byteLength : typeof v === "string" ? v.length : 0;
  if (size > MAX_INPUT_BYTES) throw refuse(`The ${name} is ${size} bytes long, more than ${MAX_INPUT_BYTES}`);
  return v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v;
}

function checkKeylen(keylen: unknown): void {
  if (typeof keylen === "number" && keylen > MAX_DERIVED_BYTES)
    throw refuse(`The value of "keylen" is ${keylen}; at most ${MAX_DERIVED_BYTES} bytes are derived`);
}

function digestSize(digest: unknown): number | undefined {
  try {
    return crypto.createHash(digest as string).digest().byteLength;
  } catch {
    return undefined;
  }
}

function pbkdf2(a: Args): Uint8Array {
  const [password, salt] = [input(a["password"], "password"), input(a["salt"], "salt")];
  const { iterations, keylen, digest } = a;
  // Node's checks of the digest, password, salt and iterations, at no cost: no key bytes asked for.
  crypto.pbkdf2Sync(password as string, salt as string, iterations as number, 0, digest as string);
  checkKeylen(keylen);
  const n = iterations as number;
  if (n > MAX_PBKDF2_ITERATIONS) throw refuse(`The value of "iterations" is ${n}; at most ${MAX_PBKDF2_ITERATIONS} are run`);
  const blocks = typeof keylen === "number" ? Math.ceil(keylen / (digestSize(digest) ?? 1)) : 1;
  if (n * blocks > MAX_PBKDF2_WORK)
    throw refuse(`${n} iterations for a ${String(keylen)}-byte key is ${n * blocks} digest rounds, more than ${MAX_PBKDF2_WORK}`);
  return new Uint8Array(crypto.pbkdf2Sync(password as string, salt as string, n, keylen as number, digest as string));
}

/** Node's refusal of scrypt parameters that OpenSSL would refuse for memory. */
function scryptMemoryError(): Error {
  return Object.assign(new RangeError("Invalid scrypt params: error:030000AC:digital envelope routines::memory limit exceeded"), {
    code: "ERR_CRYPTO_INVALID_SCRYPT_PARAMS",
  });
}

function scrypt(a: Args): Uint8Array {
  const [password, salt] = [input(a["password"], "password"), input(a["salt"], "salt")];
  const keylen = a["keylen"];
  const given = a["options"];
  const options = (typeof given === "object" && given !== null ? given : {}) as Args;
  checkKeylen(keylen);
  // Node's reading of the options: 0 (or absent) is the default; a non-number is Node's to refuse below.
  const number = (v: unknown, fallback: number) => (typeof v === "number" ? v || fallback : v === undefined ? fallback : NaN);
  const N = number(options["N"] ?? options["cost"], 16384);
  const r = number(options["r"] ?? options["blockSize"], 8);
  const p = number(options["p"] ?? options["parallelization"], 1);
  const maxmem = number(options["maxmem"], 32 * 1024 * 1024);
  if (N * r * p > MAX_SCRYPT_WORK) throw refuse(`scrypt's N·r·p is ${N * r * p}, more than ${MAX_SCRYPT_WORK}`);
  // OpenSSL's count: the blocks B and V.
  const memory = 128 * r * p + 128 * r * (N + 2);
  if (memory > MAX_SCRYPT_MEMORY) throw refuse(`scrypt needs ${memory} bytes of memory here, more than ${MAX_SCRYPT_MEMORY}`);
  // OpenSSL refuses these for memory and leaves its error queued, where the child's next
  // passphrase-encrypted key (any isolate's) would fail with it: so they never reach OpenSSL.
  const twice = (x: string, y: string) => options[x] !== undefined && options[y] !== undefined;
  const valid =
    !twice("N", "cost") &&
    !twice("r", "blockSize") &&
    !twice("p", "parallelization") &&
    Number.isInteger(N) &&
    N >= 2 &&
    (N & (N - 1)) === 0 &&
    Number.isInteger(r) &&
    r > 0 &&
    Number.isInteger(p) &&
    p > 0;
  if (valid && Number.isInteger(maxmem) && ((16 * r <= 63 && N >= 2 ** (16 * r)) || memory > maxmem)) throw scryptMemoryError();
  return new Uint8Array(crypto.scryptSync(password as string, salt as string, keylen as number, given as crypto.ScryptOptions));
}

function hkdf(a: Args): Uint8Array {
  const key = crypto.hkdfSync(
    a["digest"] as string,
    input(a["ikm"], "ikm") as string,
    input(a["salt"], "salt") as string,
    input(a["info"], "info") as string,
    a["keylen"] as number,
  );
  return new Uint8Array(key);
}

/** The key derivation host operations; undefined for an operation that is not one. */
export function deriveOperation(op: string, a: Args): { value: unknown } | undefined {
  switch (op) {
    case "crypto.pbkdf2":
      return { value: pbkdf2(a) };
    case "crypto.scrypt":
      return { value: scrypt(a) };
    case "crypto.hkdf":
      return { value: hkdf(a) };
    default:
      return undefined;
  }
}
