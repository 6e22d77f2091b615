// Symmetric ciphers for the isolate's crypto module (createCipheriv, createDecipheriv), run with
// node:crypto in the runner child. The host keeps no cipher state: the isolate hands back, with
// each call, the key, the IV and where the stream stands (the chaining block of CBC, the byte
// offset of a counter mode), and every call starts a fresh node:crypto cipher from them. An AEAD
// cipher's tag is computed or checked in one pass over all the data at final, which the isolate
// keeps until then. Work per call is bounded by the data it carries (64 MiB, as digests).
import crypto from "node:crypto";

/** Bytes one call may carry, and all the data an AEAD cipher may gather before its final. */
export const MAX_CIPHER_DATA = 64 * 1024 * 1024;

type Args = Record<string, unknown>;

/** How the isolate drives a cipher: the stateless scheme each mode uses. */
type Scheme = "block" | "ctr" | "gcm" | "chacha20-poly1305";

type CipherKind = Readonly<{ scheme: Scheme; mode: string; blockSize: number; keyLength: number; ivLength: number }>;

function codedError(ctor: ErrorConstructor | TypeErrorConstructor | RangeErrorConstructor, message: string, code: string): Error {
  return Object.assign(new ctor(message), { code });
}

function schemeOf(info: crypto.CipherInfo): Scheme | undefined {
  if (info.name === "chacha20-poly1305") return "chacha20-poly1305";
  // The "stitched" CBC-HMAC ciphers are for TLS records only, not general use.
  if (/hmac/i.test(info.name)) return undefined;
  if (info.mode === "ecb" || info.mode === "cbc") return "block";
  // Counter modes whose counter is one 16-byte block, incremented as a 128-bit integer (aes, aria, camellia, sm4).
  if (info.mode === "ctr" && info.ivLength === 16) return "ctr";
  if (info.mode === "gcm" && /aes/i.test(info.name)) return "gcm";
  return undefined;
}

/** The ciphers offered, by every name node:crypto knows them by, each checked usable once (OpenSSL 3 lists legacy ciphers it then refuses). */
const names: string[] = [];
const KINDS: ReadonlyMap<string, CipherKind> = (() => {
  // Keyed by the lower-case name: Node finds "AES-256-CBC" and "id-aes128-GCM" whatever their case.
  const kinds = new Map<string, CipherKind>();
  for (const name of crypto.getCiphers()) {
    const info = crypto.getCipherInfo(name);
    const scheme = info === undefined ? undefined : schemeOf(info);
    if (info === undefined || scheme === undefined) continue;
    try {
      crypto.createCipheriv(name, Buffer.alloc(info.keyLength), info.ivLength === undefined ? null : Buffer.alloc(info.ivLength));
    } catch {
      continue;
    }
    names.push(name);
    kinds.set(name.toLowerCase(), {
      scheme,
      mode: info.mode,
      blockSize: scheme === "block" ? (info.blockSize ?? 1) : 1,
      keyLength: info.keyLength,
      ivLength: info.ivLength ?? 0,
    });
  }
  return kinds;
})();

export const CIPHER_NAMES: readonly string[] = names;

function bytes(v: unknown, name: string, max = MAX_CIPHER_DATA): Uint8Array {
  if (!(v instanceof Uint8Array)) throw codedError(TypeError, `The "${name}" argument must be bytes`, "ERR_INVALID_ARG_TYPE");
  if (v.byteLength > max)
    throw codedError(
      RangeError,
      `The ${name} is ${v.byteLength} bytes; the Headwater sandbox ciphers at most ${max} bytes at once (host-side work is bounded)`,
      "ERR_OUT_OF_RANGE",
    );
  return v;
}

function offset(v: unknown): number {
  if (!Number.isSafeInteger(v) || (v as number) < 0)
    throw codedError(TypeError, "The cipher offset must be an integer", "ERR_INVALID_ARG_TYPE");
  return v as number;
}

function kindOf(algorithm: unknown): { name: string; kind: CipherKind } {
  if (typeof algorithm !== "string" || algorithm.length > 64)
    throw codedError(TypeError, 'The "cipher" argument must be of type string.', "ERR_INVALID_ARG_TYPE");
  const name = algorithm.toLowerCase();
  const kind = KINDS.get(name);
  if (kind !== undefined) return { name, kind };
  if (crypto.getCipherInfo(name) !== undefined)
    throw codedError(
      Error,
      `The cipher ${algorithm} is not available in the Headwater sandbox (AES in CBC, ECB, CTR and GCM modes, and chacha20-poly1305 are: see crypto.getCiphers())`,
      "ERR_CRYPTO_UNKNOWN_CIPHER",
    );
  throw codedError(Error, "Unknown cipher", "ERR_CRYPTO_UNKNOWN_CIPHER");
}

function ivOf(a: Args): Uint8Array | null {
  return a["iv"] === null || a["iv"] === undefined ? null : bytes(a["iv"], "iv", 1024);
}

function authTagLength(a: Args): number | undefined {
  const v = a["authTagLength"];
  // Anything else is Node's to refuse (createCipheriv below), with its own message.
  return v === undefined ? undefined : (v as number);
}

type NodeCipher = crypto.Cipher & { setAAD(b: Uint8Array): unknown; getAuthTag(): Buffer };
type NodeDecipher = crypto.Decipher & { setAAD(b: Uint8Array): unknown; setAuthTag(b: Uint8Array): unknown };

function nodeCipher(name: string, key: Uint8Array, iv: Uint8Array | null, decrypt: boolean, tagLength?: number): NodeCipher & NodeDecipher {
  const options = tagLength === undefined ? undefined : { authTagLength: tagLength };
  return (
    decrypt ? crypto.createDecipheriv(name, key, iv, options as never) : crypto.createCipheriv(name, key, iv, options as never)
  ) as NodeCipher & NodeDecipher;
}

/** Checks the key, IV and tag length as Node's createCipheriv does (its own errors), and says how to drive the cipher. */
function init(a: Args): CipherKind {
  const { name, kind } = kindOf(a["algorithm"]);
  nodeCipher(name, bytes(a["key"], "key", 1024), ivOf(a), a["decrypt"] === true, authTagLength(a));
  return kind;
}

/** `data` run through a 16-byte-block counter mode from `counter` (as a 128-bit integer), `skip` bytes into its first block. */
function counterStream(ctrName: string, key: Uint8Array, counter: Uint8Array, skip: number, data: Uint8Array): Uint8Array {
  const c = crypto.createCipheriv(ctrName, key, counter);
  const out = Buffer.concat([c.update(Buffer.alloc(skip)), c.update(data), c.final()]);
  return out.subarray(skip);
}

function addToCounter(counter: Uint8Array, blocks: number, width: number): Uint8Array {
  const out = Uint8Array.from(counter);
  let carry = blocks;
  for (let i = out.length - 1; i >= out.length - width && carry > 0; i--) {
    const sum = out[i] + (carry % 256);
    out[i] = sum & 0xff;
    carry = Math.floor(carry / 256) + (sum >> 8);
  }
  return out;
}

/** GCM's first counter block for the data, inc32(J0): the keystream of one zero block, decrypted with the raw cipher. */
function gcmFirstCounter(name: string, key: Uint8Array, iv: Uint8Array): Uint8Array {
  const keystream = crypto.createCipheriv(name, key, iv).update(Buffer.alloc(16));
  const raw = crypto.createDecipheriv(`aes-${key.byteLength * 8}-ecb`, key, null).setAutoPadding(false);
  return raw.update(keystream);
}

/** GCM's keystream at byte `at`: a CTR stream whose counter's low 32 bits wrap on their own (GCM's inc32). */
function gcmUpdate(name: string, key: Uint8Array, iv: Uint8Array, at: number, data: Uint8Array): Uint8Array {
  return gcmCounterStream(key, gcmFirstCounter(name, key, iv), at, data);
}

/** `data` XORed with GCM's keystream from counter block `first` (inc32(J0)), `at` bytes in. Exported for its unit test. */
export function gcmCounterStream(key: Uint8Array, first: Uint8Array, at: number, data: Uint8Array): Uint8Array {
  const ctrName = `aes-${key.byteLength * 8}-ctr`;
  const low = new DataView(first.buffer, first.byteOffset + 12, 4).getUint32(0);
  const parts: Uint8Array[] = [];
  let pos = at;
  let done = 0;
  while (done < data.byteLength) {
    const block = Math.floor(pos / 16);
    const counter = Uint8Array.from(first);
    const value = (low + block) % 2 ** 32;
    new DataView(counter.buffer, 12, 4).setUint32(0, value);
    // Up to the block where the low 32 bits wrap; the next part starts again from the wrapped value.
    const room = (2 ** 32 - value) * 16 - (pos % 16);
    const take = Math.min(room, data.byteLength - done);
    parts.push(counterStream(ctrName, key, counter, pos % 16, data.subarray(done, done + take)));
    done += take;
    pos += take;
  }
  return Buffer.concat(parts);
}

/** chacha20-poly1305's keystream at byte `at`: chacha20 from block 1 (block 0 made the Poly1305 key), the IV padded on the left to 12 bytes as OpenSSL does. */
function chachaUpdate(key: Uint8Array, iv: Uint8Array, at: number, data: Uint8Array): Uint8Array {
  const block = 1 + Math.floor(at / 64);
  if (block + Math.ceil((data.byteLength + (at % 64)) / 64) > 2 ** 32)
    throw codedError(RangeError, "The chacha20-poly1305 stream is longer than its 32-bit block counter allows", "ERR_OUT_OF_RANGE");
  const start = Buffer.alloc(16);
  start.writeUInt32LE(block, 0);
  start.set(iv, 16 - iv.byteLength);
  const c = crypto.createCipheriv("chacha20", key, start);
  return Buffer.concat([c.update(Buffer.alloc(at % 64)), c.update(data), c.final()]).subarray(at % 64);
}

/**
 * One update: for ECB and CBC whole blocks (the isolate keeps a partial block, and passes the
 * last ciphertext block as the next IV), for the counter modes any bytes at offset `at`.
 */
function update(a: Args): Uint8Array {
  const { name, kind } = kindOf(a["algorithm"]);
  const key = bytes(a["key"], "key", 1024);
  const iv = ivOf(a);
  const data = bytes(a["data"], "data");
  if (kind.scheme === "block") {
    if (data.byteLength % kind.blockSize !== 0)
      throw codedError(RangeError, "A block cipher update takes whole blocks", "ERR_OUT_OF_RANGE");
    return nodeCipher(name, key, iv, a["decrypt"] === true)
      .setAutoPadding(false)
      .update(data);
  }
  if (iv === null) throw codedError(TypeError, "Invalid initialization vector", "ERR_CRYPTO_INVALID_IV");
  const at = offset(a["at"]);
  if (kind.scheme === "ctr") return counterStream(name, key, addToCounter(iv, Math.floor(at / 16), 16), at % 16, data);
  if (kind.scheme === "gcm") return gcmUpdate(name, key, iv, at, data);
  return chachaUpdate(key, iv, at, data);
}

/** The last step: ECB and CBC's final block (padding added or checked by Node), an AEAD cipher's tag made or checked. */
function final(a: Args): { data?: Uint8Array; tag?: Uint8Array } {
  const { name, kind } = kindOf(a["algorithm"]);
  const key = bytes(a["key"], "key", 1024);
  const iv = ivOf(a);
  const decrypt = a["decrypt"] === true;
  const data = bytes(a["data"], "data");
  if (kind.scheme === "block") {
    const c = nodeCipher(name, key, iv, decrypt).setAutoPadding(a["padding"] !== false);
    return { data: Buffer.concat([c.update(data), c.final()]) };
  }
  if (kind.scheme === "ctr") return {};
  const c = nodeCipher(name, key, iv, decrypt, authTagLength(a));
  if (decrypt) c.setAuthTag(bytes(a["tag"], "tag", 16));
  const aad = bytes(a["aad"], "aad");
  if (aad.byteLength > 0) c.setAAD(aad);
  c.update(data);
  // A wrong tag: Node's "Unsupported state or unable to authenticate data".
  c.final();
  return decrypt ? {} : { tag: new Uint8Array(c.getAuthTag()) };
}

/** The cipher host operations; undefined for an operation that is not one. */
export function cipherOperation(op: string, a: Args): { value: unknown } | undefined {
  switch (op) {
    case "crypto.cipherInit":
      return { value: init(a) };
    case "crypto.cipherUpdate":
      return { value: new Uint8Array(update(a)) };
    case "crypto.cipherFinal": {
      const out = final(a);
      return {
        value: {
          data: out.data === undefined ? undefined : new Uint8Array(out.data),
          tag: out.tag === undefined ? undefined : new Uint8Array(out.tag),
        },
      };
    }
    case "crypto.ciphers":
      return { value: [...CIPHER_NAMES] };
    default:
      return undefined;
  }
}
