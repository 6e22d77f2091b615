// TextEncoder (UTF-8) and TextDecoder (UTF-8, UTF-16LE/BE, windows-1252 and the labels the
// Encoding Standard gives them): V8 alone does not provide them.

export function utf8Encode(input: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < input.length; i++) {
    let code = input.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < input.length) {
      const next = input.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
        i++;
      } else code = 0xfffd;
    } else if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    if (code < 0x80) out.push(code);
    else if (code < 0x800) out.push(0xc0 | (code >> 6), 0x80 | (code & 63));
    else if (code < 0x10000) out.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
    else out.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 63), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
  }
  return new Uint8Array(out);
}

/** UTF-8 length of a string without allocating the bytes. */
export function utf8Length(input: string): number {
  let n = 0;
  for (let i = 0; i < input.length; i++) {
    const code = input.charCodeAt(i);
    if (code < 0x80) n += 1;
    else if (code < 0x800) n += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < input.length) {
      const next = input.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** An invalid byte sequence met by a fatal decoder (Node's error). */
function invalidData(encoding: string): TypeError {
  return Object.assign(new TypeError(`The encoded data was not valid for encoding ${encoding}`), {
    code: "ERR_ENCODING_INVALID_ENCODED_DATA",
  });
}

/**
 * UTF-8 as the Encoding Standard decodes it: each maximal invalid subpart (a lone continuation
 * byte, a sequence cut short, an overlong or surrogate form) is one U+FFFD, or a TypeError when
 * fatal.
 */
export function utf8Decode(bytes: Uint8Array, fatal = false): string {
  let out = "";
  let chunk: number[] = [];
  const flush = () => {
    out += String.fromCharCode.apply(null, chunk);
    chunk = [];
  };
  const emit = (code: number) => {
    if (code > 0xffff) {
      code -= 0x10000;
      chunk.push(0xd800 + (code >> 10), 0xdc00 + (code & 1023));
    } else chunk.push(code);
    if (chunk.length > 8000) flush();
  };
  const invalid = () => {
    if (fatal) throw invalidData("utf-8");
    emit(0xfffd);
  };
  let needed = 0;
  let seen = 0;
  let code = 0;
  let lower = 0x80;
  let upper = 0xbf;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (needed === 0) {
      if (b <= 0x7f) emit(b);
      else if (b >= 0xc2 && b <= 0xdf) {
        needed = 1;
        code = b & 0x1f;
      } else if (b >= 0xe0 && b <= 0xef) {
        if (b === 0xe0) lower = 0xa0;
        if (b === 0xed) upper = 0x9f;
        needed = 2;
        code = b & 0xf;
      } else if (b >= 0xf0 && b <= 0xf4) {
        if (b === 0xf0) lower = 0x90;
        if (b === 0xf4) upper = 0x8f;
        needed = 3;
        code = b & 0x7;
      } else invalid();
      continue;
    }
    if (b < lower || b > upper) {
      // The sequence so far is one error; this byte starts afresh.
      needed = seen = code = 0;
      lower = 0x80;
      upper = 0xbf;
      invalid();
      i--;
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    code = (code << 6) | (b & 0x3f);
    if (++seen === needed) {
      emit(code);
      needed = seen = code = 0;
    }
  }
  if (needed > 0) invalid();
  flush();
  return out;
}

function toBytes(input: unknown): Uint8Array {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  if (input === undefined) return new Uint8Array(0);
  throw new TypeError("The input must be an ArrayBuffer or a view of one");
}

export class TextEncoder {
  readonly encoding = "utf-8";
  encode(input = ""): Uint8Array {
    return utf8Encode(String(input));
  }
  encodeInto(input: string, dest: Uint8Array): { read: number; written: number } {
    // Whole characters only, as many as fit; `read` counts UTF-16 code units.
    const text = String(input);
    let read = 0;
    let written = 0;
    while (read < text.length) {
      const code = text.codePointAt(read)!;
      const units = code > 0xffff ? 2 : 1;
      const bytes = utf8Encode(text.slice(read, read + units));
      if (written + bytes.length > dest.length) break;
      dest.set(bytes, written);
      written += bytes.length;
      read += units;
    }
    return { read, written };
  }
}

/** Bytes at the end of UTF-8 text that start a character the next chunk completes (0 to 3). */
export function incompleteUtf8Tail(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const b = bytes[bytes.length - back];
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/** The Encoding Standard's labels of the encodings the sandbox decodes. */
const LABELS: Record<string, string> = {};
for (const [encoding, labels] of Object.entries({
  "utf-8": ["unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"],
  "utf-16le": ["csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16", "utf-16le"],
  "utf-16be": ["unicodefffe", "utf-16be"],
  "windows-1252": [
    "ansi_x3.4-1968",
    "ascii",
    "cp1252",
    "cp819",
    "csisolatin1",
    "ibm819",
    "iso-8859-1",
    "iso-ir-100",
    "iso8859-1",
    "iso88591",
    "iso_8859-1",
    "iso_8859-1:1987",
    "l1",
    "latin1",
    "us-ascii",
    "windows-1252",
    "x-cp1252",
  ],
})) {
  for (const label of labels) LABELS[label] = encoding;
}

function fromCodes(codes: ArrayLike<number>): string {
  let out = "";
  for (let i = 0; i < codes.length; i += 8000)
    out += String.fromCharCode.apply(null, Array.prototype.slice.call(codes, i, i + 8000) as number[]);
  return out;
}

export class TextDecoder {
  readonly encoding: string;
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  /** Bytes of a character a streaming decode left for the next call. */
  #pending = new Uint8Array(0);
  /** Whether the next bytes start a stream (where a byte order mark is dropped). */
  #atStart = true;

  constructor(label: unknown = "utf-8", options: { fatal?: boolean; ignoreBOM?: boolean } = {}) {
    const encoding = LABELS[String(label).trim().toLowerCase()];
    if (encoding === undefined) {
      throw Object.assign(
        new RangeError(
          `The "${String(label)}" encoding is not supported in the sandbox (utf-8, utf-16le, utf-16be and windows-1252/latin1 are)`,
        ),
        { code: "ERR_ENCODING_NOT_SUPPORTED" },
      );
    }
    this.encoding = encoding;
    this.fatal = !!options?.fatal;
    this.ignoreBOM = !!options?.ignoreBOM;
  }

  decode(input?: unknown, options: { stream?: boolean } = {}): string {
    const given = toBytes(input);
    let bytes = given;
    if (this.#pending.length > 0) {
      bytes = new Uint8Array(this.#pending.length + given.length);
      bytes.set(this.#pending);
      bytes.set(given, this.#pending.length);
    }
    const streaming = !!options?.stream;
    const keep = streaming ? this.#tail(bytes) : 0;
    this.#pending = keep > 0 ? bytes.slice(bytes.length - keep) : new Uint8Array(0);
    bytes = bytes.subarray(0, bytes.length - keep);
    if (this.#atStart && !this.ignoreBOM) bytes = this.#withoutBom(bytes, streaming);
    if (bytes.length > 0 || !streaming) this.#atStart = !streaming;
    return this.#decodeWhole(bytes, !streaming);
  }

  /** Bytes at the end that a following chunk may complete. */
  #tail(bytes: Uint8Array): number {
    if (this.encoding === "utf-8") return incompleteUtf8Tail(bytes);
    if (this.encoding === "windows-1252") return 0;
    let keep = bytes.length % 2;
    // A high surrogate at the end waits for its low half.
    const last = bytes.length - keep - 2;
    if (last >= 0) {
      const unit = this.encoding === "utf-16le" ? bytes[last] | (bytes[last + 1] << 8) : (bytes[last] << 8) | bytes[last + 1];
      if (unit >= 0xd800 && unit <= 0xdbff) keep += 2;
    }
    return keep;
  }

  #withoutBom(bytes: Uint8Array, streaming: boolean): Uint8Array {
    const bom =
      this.encoding === "utf-8"
        ? [0xef, 0xbb, 0xbf]
        : this.encoding === "utf-16le"
          ? [0xff, 0xfe]
          : this.encoding === "utf-16be"
            ? [0xfe, 0xff]
            : [];
    if (bom.length === 0 || (streaming && bytes.length < bom.length && bom.slice(0, bytes.length).every((b, i) => bytes[i] === b)))
      return bytes;
    return bom.every((b, i) => bytes[i] === b) ? bytes.subarray(bom.length) : bytes;
  }

  #decodeWhole(bytes: Uint8Array, final: boolean): string {
    if (this.encoding === "utf-8") return utf8Decode(bytes, this.fatal);
    // Node 20 decodes every windows-1252 label byte for byte (as ISO-8859-1: 0x80 is U+0080, where
    // the Encoding Standard has U+20AC); components expect Node's answers.
    if (this.encoding === "windows-1252") return fromCodes(bytes);
    const little = this.encoding === "utf-16le";
    const units = new Uint16Array(bytes.length >> 1);
    for (let i = 0; i < units.length; i++)
      units[i] = little ? bytes[2 * i] | (bytes[2 * i + 1] << 8) : (bytes[2 * i] << 8) | bytes[2 * i + 1];
    // Lone surrogates (and, at the end, an odd byte) are errors: U+FFFD, or a TypeError when fatal.
    for (let i = 0; i < units.length; i++) {
      const unit = units[i];
      if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < units.length && units[i + 1] >= 0xdc00 && units[i + 1] <= 0xdfff) i++;
      else if (unit >= 0xd800 && unit <= 0xdfff) {
        if (this.fatal) throw invalidData(this.encoding);
        units[i] = 0xfffd;
      }
    }
    let text = fromCodes(units);
    if (final && bytes.length % 2 === 1) {
      if (this.fatal) throw invalidData(this.encoding);
      text += "\ufffd";
    }
    return text;
  }
}

/** The bytes of `chunks` one after another, in one new array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const c of chunks) size += c.byteLength;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
