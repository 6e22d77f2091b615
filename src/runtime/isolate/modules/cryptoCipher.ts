// Node's createCipheriv and createDecipheriv, run on the host (sandbox/hostCiphers.ts), which
// keeps no state between calls: this object holds where the stream stands and hands it over with
// each update. ECB and CBC send whole blocks and keep the rest (and, decrypting with padding, the
// last block, as OpenSSL does) until final; CBC passes its last ciphertext block as the next IV.
// CTR, GCM and chacha20-poly1305 send their byte offset. GCM and chacha20-poly1305 also keep all
// the data until final, where the host makes or checks the tag over it in one pass. These are not
// streams: Node's Cipheriv is a Transform, this one has no write(), pipe() or events.
import { Buffer } from "buffer";
import { hostSync } from "../bridge.js";
import { concatBytes } from "../textCodec.js";
import { KEY_INPUT, secretKeyInput } from "./crypto.js";
import { type Data, describeReceived, invalidType, isBinary, nodeError, toBytes } from "./cryptoArgs.js";

/** All the data a GCM or chacha20-poly1305 cipher may gather before its final (the host's bound per call). */
const MAX_AEAD_DATA = 64 * 1024 * 1024;
/** The tag lengths GCM accepts when createDecipheriv was given none (Node 20's list). */
const GCM_TAG_LENGTHS = new Set([4, 8, 12, 13, 14, 15, 16]);

type Scheme = "block" | "ctr" | "gcm" | "chacha20-poly1305";
type CipherKind = Readonly<{ scheme: Scheme; mode: string; blockSize: number }>;

function invalidState(operation?: string): Error {
  return nodeError(
    new Error(operation === undefined ? "Invalid state" : `Invalid state for operation ${operation}`),
    "ERR_CRYPTO_INVALID_STATE",
  );
}

/** Bytes handed to setAAD and setAuthTag: Node names the argument "buffer". */
function bufferArg(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== "string" && !isBinary(value))
    throw invalidType("buffer", "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", value);
  return Uint8Array.from(toBytes(value, typeof encoding === "string" ? encoding : undefined));
}

/** The bytes held back from a string output so a character split between two calls comes out whole, as Node's StringDecoder does. */
function carried(bytes: Uint8Array, encoding: string): number {
  if (encoding === "base64") return bytes.byteLength % 3;
  if (encoding === "utf16le" || encoding === "ucs2") return bytes.byteLength % 2;
  if (encoding !== "utf8") return 0;
  for (let back = 1; back <= Math.min(3, bytes.byteLength); back++) {
    const b = bytes[bytes.byteLength - back];
    if ((b & 0xc0) === 0x80) continue;
    const needs = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return needs > back ? back : 0;
  }
  return 0;
}

function normalEncoding(encoding: string): string {
  const e = encoding.toLowerCase();
  return e === "utf-8" ? "utf8" : e === "ucs-2" || e === "utf-16le" ? "utf16le" : e === "binary" ? "latin1" : e;
}

class OutputDecoder {
  #rest: Uint8Array = new Uint8Array(0);
  constructor(readonly encoding: string) {}
  write(bytes: Uint8Array, end: boolean): string {
    const all = this.#rest.byteLength === 0 ? bytes : concatBytes([this.#rest, bytes]);
    const keep = end ? 0 : carried(all, this.encoding);
    this.#rest = all.slice(all.byteLength - keep);
    return Buffer.from(all.buffer, all.byteOffset, all.byteLength - keep).toString(this.encoding as BufferEncoding);
  }
}

type CipherOptions = { authTagLength?: unknown; encoding?: unknown } | undefined;

class CipherBase {
  readonly #algorithm: string;
  readonly #key: Uint8Array;
  readonly #iv: Uint8Array | null;
  readonly #decrypt: boolean;
  readonly #kind: CipherKind;
  readonly #tagLength: number | undefined;
  /** CBC's chaining block: the IV, then the last ciphertext block. */
  #chain: Uint8Array | null;
  /** Bytes waiting for a whole block (ECB, CBC). */
  #pending: Uint8Array = new Uint8Array(0);
  /** Bytes done so far (the counter modes' position). */
  #at = 0;
  /** GCM and chacha20-poly1305: the data (plaintext or ciphertext) and AAD the tag is made over at final. */
  #gathered: Uint8Array[] = [];
  #gatheredBytes = 0;
  #aad: Uint8Array[] = [];
  #tag: Uint8Array | undefined;
  #padding = true;
  #started = false;
  #done = false;
  #decoder: OutputDecoder | undefined;

  constructor(cipher: unknown, key: unknown, iv: unknown, options: CipherOptions, decrypt: boolean) {
    if (typeof cipher !== "string") throw invalidType("cipher", "of type string", cipher);
    const encoding = typeof options?.encoding === "string" ? options.encoding : undefined;
    this.#key = secretKeyInput(key, "key", KEY_INPUT, encoding);
    if (iv !== null && typeof iv !== "string" && !isBinary(iv))
      throw invalidType("iv", "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", iv);
    this.#iv = iv === null ? null : Uint8Array.from(toBytes(iv as string));
    // A number or another primitive goes to the host, where Node refuses a bad one in its words.
    const tagLength = options?.authTagLength;
    if ((typeof tagLength === "object" && tagLength !== null) || typeof tagLength === "function")
      throw nodeError(
        new TypeError(`The property 'options.authTagLength' is invalid.${describeReceived(tagLength)}`),
        "ERR_INVALID_ARG_VALUE",
      );
    this.#algorithm = cipher;
    this.#decrypt = decrypt;
    // The host checks the name, key, IV and tag length with node:crypto: Node's own errors.
    this.#kind = hostSync<CipherKind>("crypto.cipherInit", {
      algorithm: cipher,
      key: this.#key,
      iv: this.#iv,
      decrypt,
      authTagLength: tagLength,
    });
    this.#tagLength = tagLength as number | undefined;
    this.#chain = this.#iv;
  }

  get #aead(): boolean {
    return this.#kind.scheme === "gcm" || this.#kind.scheme === "chacha20-poly1305";
  }

  #output(bytes: Uint8Array, encoding: unknown, end: boolean): Buffer | string {
    if (typeof encoding !== "string" || encoding === "buffer") return Buffer.from(bytes);
    const normal = normalEncoding(encoding);
    this.#decoder ??= new OutputDecoder(normal);
    if (this.#decoder.encoding !== normal) throw nodeError(new Error("Cannot change encoding"), "ERR_INTERNAL_ASSERTION");
    return this.#decoder.write(bytes, end);
  }

  #request(data: Uint8Array): Record<string, unknown> {
    return { algorithm: this.#algorithm, key: this.#key, iv: this.#chain, decrypt: this.#decrypt, data };
  }

  update(data: unknown, inputEncoding?: unknown, outputEncoding?: unknown): Buffer | string {
    if (this.#done) throw new Error("Trying to add data in unsupported state");
    if (typeof data === "string") {
      if (inputEncoding === "hex" && data.length % 2 !== 0)
        throw nodeError(
          new TypeError(`The argument 'encoding' is invalid for data of length ${data.length}. Received 'hex'`),
          "ERR_INVALID_ARG_VALUE",
        );
    } else if (!ArrayBuffer.isView(data))
      throw invalidType("data", "of type string or an instance of Buffer, TypedArray, or DataView", data);
    const bytes = Uint8Array.from(toBytes(data as Data, typeof inputEncoding === "string" ? inputEncoding : undefined));
    this.#started = true;
    return this.#output(this.#kind.scheme === "block" ? this.#blocks(bytes) : this.#stream(bytes), outputEncoding, false);
  }

  /** ECB and CBC: whole blocks to the host; the rest, and a decrypting padded cipher's last block, wait. */
  #blocks(bytes: Uint8Array): Uint8Array {
    const all = this.#pending.byteLength === 0 ? bytes : concatBytes([this.#pending, bytes]);
    const size = this.#kind.blockSize;
    let ready = all.byteLength - (all.byteLength % size);
    if (this.#decrypt && this.#padding && ready === all.byteLength && ready > 0) ready -= size;
    this.#pending = all.slice(ready);
    if (ready === 0) return new Uint8Array(0);
    const input = all.subarray(0, ready);
    const out = hostSync<Uint8Array>("crypto.cipherUpdate", this.#request(input));
    if (this.#kind.mode === "cbc") this.#chain = (this.#decrypt ? input : out).slice(ready - size);
    return out;
  }

  /** CTR, GCM, chacha20-poly1305: any bytes at the stream's offset; the AEAD ciphers also keep them for the tag. */
  #stream(bytes: Uint8Array): Uint8Array {
    if (bytes.byteLength === 0) return bytes;
    if (this.#aead) {
      if (this.#gatheredBytes + bytes.byteLength > MAX_AEAD_DATA)
        throw nodeError(
          new RangeError(`The Headwater sandbox takes at most ${MAX_AEAD_DATA} bytes through one ${this.#algorithm} cipher`),
          "ERR_OUT_OF_RANGE",
        );
      this.#gathered.push(bytes);
      this.#gatheredBytes += bytes.byteLength;
    }
    const out = hostSync<Uint8Array>("crypto.cipherUpdate", { ...this.#request(bytes), at: this.#at });
    this.#at += bytes.byteLength;
    return out;
  }

  final(outputEncoding?: unknown): Buffer | string {
    if (this.#done) throw invalidState();
    this.#done = true;
    let out: Uint8Array = new Uint8Array(0);
    if (this.#kind.scheme === "block") {
      const pending = this.#pending;
      this.#pending = new Uint8Array(0);
      out = hostSync<{ data: Uint8Array }>("crypto.cipherFinal", { ...this.#request(pending), padding: this.#padding }).data;
    } else if (this.#aead) {
      const data = concatBytes(this.#gathered);
      this.#gathered = [];
      if (this.#decrypt && this.#tag === undefined) throw new Error("Unsupported state or unable to authenticate data");
      const done = hostSync<{ tag?: Uint8Array }>("crypto.cipherFinal", {
        ...this.#request(data),
        iv: this.#iv,
        aad: concatBytes(this.#aad),
        tag: this.#tag,
        authTagLength: this.#tagLength,
      });
      if (!this.#decrypt) this.#tag = done.tag;
    }
    return this.#output(out, outputEncoding, true);
  }

  setAutoPadding(autoPadding?: unknown): this {
    if (this.#done) throw invalidState("setAutoPadding");
    this.#padding = autoPadding === undefined ? true : Boolean(autoPadding);
    return this;
  }

  setAAD(buffer: unknown, options?: { encoding?: unknown; plaintextLength?: unknown }): this {
    const bytes = bufferArg(buffer, options?.encoding);
    if (!this.#aead || this.#started || this.#done) throw invalidState("setAAD");
    this.#aad.push(bytes);
    return this;
  }

  protected authTag(): Buffer {
    if (!this.#aead || !this.#done || this.#tag === undefined) throw invalidState("getAuthTag");
    return Buffer.from(this.#tag);
  }

  protected useAuthTag(buffer: unknown, encoding: unknown): this {
    const tag = bufferArg(buffer, encoding);
    if (!this.#aead || this.#done || this.#tag !== undefined) throw invalidState("setAuthTag");
    const allowed =
      this.#tagLength !== undefined
        ? tag.byteLength === this.#tagLength
        : this.#kind.scheme === "gcm"
          ? GCM_TAG_LENGTHS.has(tag.byteLength)
          : tag.byteLength === 16;
    if (!allowed) throw nodeError(new TypeError(`Invalid authentication tag length: ${tag.byteLength}`), "ERR_CRYPTO_INVALID_AUTH_TAG");
    this.#tag = tag;
    return this;
  }
}

/** Node's Cipheriv (createCipheriv). */
export class Cipheriv extends CipherBase {
  constructor(cipher: unknown, key: unknown, iv: unknown, options?: CipherOptions) {
    super(cipher, key, iv, options, false);
  }
  getAuthTag(): Buffer {
    return this.authTag();
  }
}

/** Node's Decipheriv (createDecipheriv). */
export class Decipheriv extends CipherBase {
  constructor(cipher: unknown, key: unknown, iv: unknown, options?: CipherOptions) {
    super(cipher, key, iv, options, true);
  }
  setAuthTag(buffer: unknown, encoding?: unknown): this {
    return this.useAuthTag(buffer, encoding);
  }
}

export function createCipheriv(cipher: unknown, key: unknown, iv: unknown, options?: CipherOptions): Cipheriv {
  return new Cipheriv(cipher, key, iv, options);
}

export function createDecipheriv(cipher: unknown, key: unknown, iv: unknown, options?: CipherOptions): Decipheriv {
  return new Decipheriv(cipher, key, iv, options);
}

let cipherNames: readonly string[] | undefined;

/** The ciphers offered here (a subset of Node's list): AES and the other block ciphers in ECB, CBC, CTR, AES-GCM, chacha20-poly1305. */
export function getCiphers(): string[] {
  cipherNames ??= Object.freeze(hostSync<string[]>("crypto.ciphers", {}));
  return [...cipherNames];
}
