// Headwater's own equivalent of the npm `form-data` package (not a copy of it): the Node API that
// app files and actions use to upload files (`append` with a Buffer or a stream and `{ filename,
// contentType }`, `getHeaders()`, `getBoundary()`, `getBuffer()`), with axios, fetch, node-fetch
// and `pipe` sending it. Stream values (an `fs.createReadStream` of /tmp, an axios response
// stream) are read whole when the form is sent.
import { Buffer } from "buffer";
import EventEmitter from "events";
import { blobBytes, escapeName, type Blob } from "../blob.js";
import { contentTypeOf } from "../contentTypes.js";
import { NODE_FORM_BODY } from "../nodeForm.js";

const DEFAULT_CONTENT_TYPE = "application/octet-stream";
const CRLF = "\r\n";

interface AppendOptions {
  filename?: string;
  filepath?: string;
  contentType?: string;
  knownLength?: number;
  header?: string | Record<string, string | string[]>;
}

type Value = string | Uint8Array | AsyncIterable<unknown>;

interface Part {
  readonly header: string;
  value: Value;
  readonly knownLength?: number;
}

function isStream(value: unknown): value is AsyncIterable<unknown> & { path?: unknown } {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { pipe?: unknown }).pipe === "function" &&
    typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function"
  );
}

function isBlob(value: unknown): boolean {
  const tag = Object.prototype.toString.call(value);
  return tag === "[object Blob]" || tag === "[object File]";
}

const baseName = (path: string) => path.replace(/\\/g, "/").split("/").pop() ?? path;

/** An HTTP response read as a stream (Node's IncomingMessage, or axios's stream body here). */
function isResponseStream(value: unknown): value is { headers?: Record<string, unknown>; client?: { _httpMessage?: { path?: string } } } {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { readable?: unknown }).readable === true &&
    Object.hasOwn(value, "httpVersion")
  );
}

function randomHex(digits: number): string {
  const bytes = new Uint8Array(Math.ceil(digits / 2));
  const crypto = (globalThis as { crypto?: { getRandomValues?: (b: Uint8Array) => Uint8Array } }).crypto;
  if (crypto?.getRandomValues) crypto.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0"))
    .join("")
    .slice(0, digits);
}

async function readWhole(stream: AsyncIterable<unknown>): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) {
    chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks);
}

export default class FormData extends EventEmitter {
  static readonly LINE_BREAK = CRLF;
  static readonly DEFAULT_CONTENT_TYPE = DEFAULT_CONTENT_TYPE;
  readonly #parts: Part[] = [];
  #boundary: string | undefined;

  constructor(options?: Record<string, unknown>) {
    super();
    void options;
  }

  append(field: string, value: unknown, options?: string | AppendOptions): void {
    const opts: AppendOptions = typeof options === "string" ? { filename: options } : { ...options };
    if (typeof value === "number" || typeof value === "boolean") value = String(value);
    if (Array.isArray(value)) {
      // As form-data: an array is not a value (append each item instead).
      this.emit("error", new Error("Arrays are not supported."));
      return;
    }
    let stored: Value;
    let knownLength: number | undefined = opts.knownLength;
    if (typeof value === "string") {
      stored = value;
      knownLength ??= Buffer.byteLength(value);
    } else if (value instanceof Uint8Array) {
      stored = value;
      knownLength ??= value.byteLength;
    } else if (value instanceof ArrayBuffer) {
      stored = new Uint8Array(value);
      knownLength ??= value.byteLength;
    } else if (isStream(value)) {
      stored = value;
    } else if (isBlob(value)) {
      // A Blob or File (code written for the standard FormData): its bytes, its type, a File's name.
      stored = blobBytes(value as Blob);
      knownLength ??= stored.byteLength;
      const named = (value as { name?: unknown }).name;
      opts.filename ??= typeof named === "string" ? named : "blob";
      opts.contentType ??= (value as { type: string }).type || undefined;
    } else if (value === undefined || value === null) {
      throw new TypeError(`form-data: the value of "${field}" is ${String(value)}`);
    } else {
      throw new TypeError(`form-data: the value of "${field}" must be a string, number, Buffer, Blob or readable stream`);
    }
    this.#parts.push({ header: this.#partHeader(field, value, opts), value: stored, knownLength });
  }

  #partHeader(field: string, value: unknown, opts: AppendOptions): string {
    if (typeof opts.header === "string") return opts.header;
    // As form-data names and types a part: the options, the value's `name` or `path` (a file
    // stream), or, for an HTTP response stream (axios's `responseType: "stream"`), its request's
    // path and its Content-Type.
    const text = (key: string): string | undefined => {
      const found = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
      return typeof found === "string" && found !== "" ? found : undefined;
    };
    const response = isResponseStream(value) ? value : undefined;
    const lookup = (name: string | undefined) => (name === undefined ? undefined : contentTypeOf(name));
    const named = opts.filename || text("name") || text("path");
    const filename =
      opts.filepath ?? (named ? baseName(named) : response ? baseName(response.client?._httpMessage?.path ?? "") || undefined : undefined);
    const responseType = response?.headers?.["content-type"];
    const contentType =
      opts.contentType ??
      lookup(text("name")) ??
      lookup(text("path")) ??
      (typeof responseType === "string" ? responseType : undefined) ??
      lookup(opts.filepath ?? opts.filename) ??
      (typeof value === "object" ? DEFAULT_CONTENT_TYPE : undefined);
    const lines: Record<string, string[]> = {
      "Content-Disposition": [
        `form-data; name="${escapeName(String(field))}"${filename === undefined ? "" : `; filename="${escapeName(filename)}"`}`,
      ],
      ...(contentType === undefined ? {} : { "Content-Type": [contentType] }),
    };
    if (opts.header) {
      for (const [name, given] of Object.entries(opts.header)) lines[name] = Array.isArray(given) ? given : [given];
    }
    let header = "";
    for (const [name, values] of Object.entries(lines)) if (values.length > 0) header += `${name}: ${values.join("; ")}${CRLF}`;
    return `--${this.getBoundary()}${CRLF}${header}${CRLF}`;
  }

  getBoundary(): string {
    // As form-data: 26 dashes and 24 random hexadecimal digits.
    this.#boundary ??= `${"-".repeat(26)}${randomHex(24)}`;
    return this.#boundary;
  }

  setBoundary(boundary: string): void {
    if (typeof boundary !== "string") throw new TypeError("FormData boundary must be a string");
    this.#boundary = boundary;
  }

  getHeaders(userHeaders: Record<string, unknown> = {}): Record<string, string> {
    // The caller's headers (names lowercased) win, as form-data's do.
    const headers: Record<string, string> = { "content-type": `multipart/form-data; boundary=${this.getBoundary()}` };
    for (const [name, value] of Object.entries(userHeaders)) headers[name.toLowerCase()] = String(value);
    return headers;
  }

  #closing(): string {
    return `--${this.getBoundary()}--${CRLF}`;
  }

  #encode(values: readonly Uint8Array[]): Buffer {
    const chunks: Buffer[] = [];
    this.#parts.forEach((part, i) => {
      chunks.push(Buffer.from(part.header), Buffer.from(values[i]), Buffer.from(CRLF));
    });
    chunks.push(Buffer.from(this.#closing()));
    return Buffer.concat(chunks);
  }

  /** The whole body now; every value must be a string or bytes (a stream is read only when the form is sent). */
  getBuffer(): Buffer {
    return this.#encode(
      this.#parts.map((part) => {
        if (typeof part.value === "string") return Buffer.from(part.value);
        if (part.value instanceof Uint8Array) return part.value;
        throw new Error("form-data: getBuffer() cannot read a stream value; send the form with axios or fetch, which read it");
      }),
    );
  }

  hasKnownLength(): boolean {
    return this.#parts.every((part) => part.knownLength !== undefined);
  }

  getLengthSync(): number {
    let length = Buffer.byteLength(this.#closing());
    for (const part of this.#parts) length += Buffer.byteLength(part.header) + (part.knownLength ?? 0) + CRLF.length;
    return length;
  }

  getLength(callback: (error: Error | null, length?: number) => void): void {
    this[NODE_FORM_BODY]().then(
      ({ body }) => callback(null, body.byteLength),
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
    );
  }

  /** The body and its Content-Type, stream values read whole (once: they are kept as bytes). */
  async [NODE_FORM_BODY](): Promise<{ body: Uint8Array; contentType: string }> {
    for (const part of this.#parts)
      if (typeof part.value !== "string" && !(part.value instanceof Uint8Array)) part.value = await readWhole(part.value);
    const body = this.#encode(
      this.#parts.map((part) => (typeof part.value === "string" ? Buffer.from(part.value) : (part.value as Uint8Array))),
    );
    return { body, contentType: `multipart/form-data; boundary=${this.getBoundary()}` };
  }

  /** Writes the body into a writable (an http request, a file stream) and ends it. */
  pipe<T extends { write(chunk: Uint8Array): unknown; end(): unknown; emit?(event: string, error: unknown): unknown }>(destination: T): T {
    this[NODE_FORM_BODY]().then(
      ({ body }) => {
        destination.write(body);
        destination.end();
        this.emit("end");
      },
      (error: unknown) => {
        this.emit("error", error);
        destination.emit?.("error", error);
      },
    );
    return destination;
  }

  submit(): never {
    throw new Error(
      "form-data: submit() is not available in the sandbox; send the form with axios or fetch (`data: form`, `headers: form.getHeaders()`)",
    );
  }

  override toString(): string {
    return "[object FormData]";
  }
}
