// Blob, File and FormData as Node 20 has them as globals, in memory (a Blob's bytes are one
// Uint8Array in the isolate, counted in its heap). fetch sends a Blob or a FormData body
// (multipart/form-data, as Node's fetch encodes it).
import { concatBytes, utf8Decode, utf8Encode } from "./textCodec.js";
import type { ReadableStream as PonyfillStream } from "web-streams-polyfill";

type BlobPart = string | ArrayBuffer | ArrayBufferView | Blob;

function partBytes(part: BlobPart): Uint8Array {
  if (part instanceof Blob) return bytesOf(part);
  if (part instanceof ArrayBuffer) return new Uint8Array(part.slice(0));
  if (ArrayBuffer.isView(part)) return new Uint8Array(part.buffer, part.byteOffset, part.byteLength).slice();
  return utf8Encode(String(part));
}

function normalizeType(type: unknown): string {
  const t = type === undefined ? "" : String(type);
  return /^[\x20-\x7e]*$/.test(t) ? t.toLowerCase() : "";
}

let bytesOf: (blob: Blob) => Uint8Array;

export class Blob {
  readonly #bytes: Uint8Array;
  readonly #type: string;
  constructor(parts: Iterable<BlobPart> = [], options: { type?: string; endings?: string } = {}) {
    if (parts === null || typeof parts !== "object" || typeof parts[Symbol.iterator] !== "function") {
      throw new TypeError('The "sources" argument must be a sequence.');
    }
    this.#bytes = concatBytes([...parts].map(partBytes));
    this.#type = normalizeType(options?.type);
  }
  get size(): number {
    return this.#bytes.length;
  }
  get type(): string {
    return this.#type;
  }
  slice(start?: number, end?: number, type?: string): Blob {
    const size = this.#bytes.length;
    const clamp = (v: number | undefined, fallback: number) => {
      if (v === undefined) return fallback;
      const n = Math.trunc(Number(v)) || 0;
      return n < 0 ? Math.max(size + n, 0) : Math.min(n, size);
    };
    const from = clamp(start, 0);
    const to = clamp(end, size);
    return new Blob([this.#bytes.subarray(from, Math.max(from, to))], { type: type === undefined ? "" : type });
  }
  async text(): Promise<string> {
    return utf8Decode(this.#bytes);
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    return this.#bytes.slice().buffer;
  }
  async bytes(): Promise<Uint8Array> {
    return this.#bytes.slice();
  }
  stream(): PonyfillStream<Uint8Array> {
    const bytes = this.#bytes;
    let sent = false;
    return new (globalThis as unknown as { ReadableStream: typeof PonyfillStream }).ReadableStream({
      type: "bytes",
      pull(controller) {
        if (!sent && bytes.length > 0) controller.enqueue(bytes.slice());
        sent = true;
        controller.close();
      },
    });
  }
  static {
    bytesOf = (blob) => blob.#bytes;
  }
}
Object.defineProperty(Blob.prototype, Symbol.toStringTag, { value: "Blob", configurable: true });

export class File extends Blob {
  readonly #name: string;
  readonly #lastModified: number;
  constructor(parts: Iterable<BlobPart>, name: string, options: { type?: string; lastModified?: number } = {}) {
    if (arguments.length < 2) throw new TypeError('The "fileBits" and "fileName" arguments must be specified');
    super(parts, options);
    this.#name = String(name);
    this.#lastModified = options?.lastModified === undefined ? Date.now() : Math.trunc(Number(options.lastModified)) || 0;
  }
  get name(): string {
    return this.#name;
  }
  get lastModified(): number {
    return this.#lastModified;
  }
  get webkitRelativePath(): string {
    return "";
  }
}
Object.defineProperty(File.prototype, Symbol.toStringTag, { value: "File", configurable: true });

type FormValue = string | File;

function entryValue(value: unknown, filename: unknown, argc: number): FormValue {
  if (value instanceof Blob) {
    const name = argc > 2 ? String(filename) : value instanceof File ? value.name : "blob";
    if (value instanceof File && argc <= 2) return value;
    return new File([value], name, { type: value.type, lastModified: value instanceof File ? value.lastModified : undefined });
  }
  if (argc > 2) throw new TypeError("Failed to execute 'append' on 'FormData': parameter 2 is not of type 'Blob'");
  return String(value);
}

export class FormData {
  #entries: [string, FormValue][] = [];
  constructor(form?: unknown) {
    if (form !== undefined) throw new TypeError("FormData: the form element argument is not supported (there is no DOM)");
  }
  append(name: string, value: unknown, filename?: string): void {
    this.#entries.push([String(name), entryValue(value, filename, arguments.length)]);
  }
  set(name: string, value: unknown, filename?: string): void {
    const key = String(name);

    const entry: [string, FormValue] = [key, entryValue(value, filename, arguments.length)];
    const first = this.#entries.findIndex(([k]) => k === key);
    if (first < 0) this.#entries.push(entry);
    else this.#entries = [...this.#entries.slice(0, first), entry, ...this.#entries.slice(first + 1).filter(([k]) => k !== key)];
  }
  delete(name: string): void {
    const key = String(name);
    this.#entries = this.#entries.filter(([k]) => k !== key);
  }
  get(name: string): FormValue | null {
    const key = String(name);
    return this.#entries.find(([k]) => k === key)?.[1] ?? null;
  }
  getAll(name: string): FormValue[] {
    const key = String(name);
    return this.#entries.filter(([k]) => k === key).map(([, v]) => v);
  }
  has(name: string): boolean {
    const key = String(name);
    return this.#entries.some(([k]) => k === key);
  }
  forEach(cb: (value: FormValue, name: string, form: FormData) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) cb.call(thisArg, v, k, this);
  }
  *entries(): IterableIterator<[string, FormValue]> {
    for (let i = 0; i < this.#entries.length; i++) yield [this.#entries[i][0], this.#entries[i][1]];
  }
  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): IterableIterator<FormValue> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): IterableIterator<[string, FormValue]> {
    return this.entries();
  }
}
Object.defineProperty(FormData.prototype, Symbol.toStringTag, { value: "FormData", configurable: true });

/** A Blob's bytes, for a request body (not copied: the body is copied to the host). */
export function blobBytes(blob: Blob): Uint8Array {
  return bytesOf(blob);
}

/** A multipart field or file name as it goes between quotes: line breaks and quotes escaped. */
export const escapeName = (s: string) => s.replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/"/g, "%22");

/** A FormData as a multipart/form-data body, the way Node's fetch (undici) writes it. */
export function encodeFormData(form: FormData): { body: Uint8Array; contentType: string } {
  let boundary = "----formdata-headwater-";
  for (let i = 0; i < 2; i++)
    boundary += Math.floor(Math.random() * 1e11)
      .toString()
      .padStart(11, "0");
  const chunks: Uint8Array[] = [];
  for (const [name, value] of form) {
    if (typeof value === "string") {
      chunks.push(
        utf8Encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"\r\n\r\n${value.replace(/\r(?!\n)|(?<!\r)\n/g, "\r\n")}\r\n`,
        ),
      );
    } else {
      chunks.push(
        utf8Encode(
          `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(name)}"; filename="${escapeName(value.name)}"\r\n` +
            `Content-Type: ${value.type || "application/octet-stream"}\r\n\r\n`,
        ),
        bytesOf(value),
        utf8Encode("\r\n"),
      );
    }
  }
  chunks.push(utf8Encode(`--${boundary}--\r\n`));
  return { body: concatBytes(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
