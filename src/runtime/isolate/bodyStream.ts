// A response body as a readable stream (axios `responseType: "stream"`). When the component's
// bundle carries Node's `stream` (it imported it, or a package did), that module registers itself
// here and bodies are real Readable streams; otherwise this small one serves the usual uses:
// pipe(), "data"/"end" events, setEncoding and async iteration.
import { Buffer } from "buffer";
import EventEmitter from "events";

interface ReadableLike {
  from(chunks: unknown[], options?: { objectMode?: boolean }): unknown;
}

let registered: ReadableLike | undefined;

/** Called by the bundled `stream` module when it loads. */
export function registerReadable(readable: ReadableLike): void {
  registered ??= readable;
}

let readStreamOf: ((path: string) => unknown) | undefined;

/** Called by the bundled `fs` module when it loads: its fs.ReadStream for a file of /tmp. */
export function registerReadStream(make: (path: string) => unknown): void {
  readStreamOf ??= make;
}

/**
 * A file of the run's /tmp as a stream, as Node's `fs.createReadStream(path)`: the bundled `fs`
 * module's ReadStream when the component has it (`instanceof fs.ReadStream` holds), else a body
 * stream that carries the file's `path`, which form-data and SDKs name and type an upload from.
 */
export function fileStream(path: string, data: Uint8Array): unknown {
  return readStreamOf ? readStreamOf(path) : Object.assign(bodyStream(data) as object, { path });
}

class BodyStream extends EventEmitter {
  readable = true;
  readableEnded = false;
  destroyed = false;
  #chunk: Buffer | undefined;
  #encoding: BufferEncoding | undefined;
  #flowing = false;
  #scheduled = false;

  constructor(body: Buffer) {
    super();
    this.#chunk = body;
    // As Node's: attaching a "data" listener starts the flow.
    this.on("newListener", (event: string) => {
      if (event === "data" || event === "readable") queueMicrotask(() => this.resume());
    });
  }
  setEncoding(encoding: BufferEncoding): this {
    this.#encoding = encoding;
    return this;
  }
  pause(): this {
    this.#flowing = false;
    return this;
  }
  isPaused(): boolean {
    return !this.#flowing;
  }
  resume(): this {
    this.#flowing = true;
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.#flush());
    }
    return this;
  }
  read(): Buffer | string | null {
    const chunk = this.#chunk;
    this.#chunk = undefined;
    if (chunk === undefined) {
      this.#end();
      return null;
    }
    return this.#encoding ? chunk.toString(this.#encoding) : chunk;
  }
  pipe<T extends { write(chunk: unknown): unknown; end(): unknown }>(destination: T, options?: { end?: boolean }): T {
    this.on("data", (chunk) => destination.write(chunk));
    if (options?.end !== false) this.once("end", () => destination.end());
    (destination as unknown as EventEmitter).emit?.("pipe", this);
    return destination;
  }
  unpipe(): this {
    this.removeAllListeners("data");
    return this;
  }
  destroy(error?: Error): this {
    this.destroyed = true;
    this.#chunk = undefined;
    if (error) queueMicrotask(() => this.emit("error", error));
    queueMicrotask(() => this.emit("close"));
    return this;
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer | string> {
    const chunk = this.read();
    if (chunk !== null && (typeof chunk === "string" ? chunk.length > 0 : chunk.byteLength > 0)) yield chunk;
  }
  #flush(): void {
    this.#scheduled = false;
    if (!this.#flowing || this.destroyed) return;
    const chunk = this.#chunk;
    this.#chunk = undefined;
    if (chunk !== undefined && chunk.byteLength > 0) this.emit("data", this.#encoding ? chunk.toString(this.#encoding) : chunk);
    this.#end();
  }
  #end(): void {
    if (this.readableEnded) return;
    this.readableEnded = true;
    this.readable = false;
    this.emit("end");
    this.emit("close");
  }
}

export function bodyStream(body: Uint8Array): unknown {
  const buffer = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return registered ? registered.from([buffer], { objectMode: false }) : new BodyStream(buffer);
}

/**
 * axios's `responseType: "stream"` body: in Node it is the response's IncomingMessage, and
 * form-data names a part appended from it by its request's path (`client._httpMessage.path`) and
 * types it by its Content-Type, so the stream carries those fields of one.
 */
export function responseStream(
  body: Uint8Array,
  response: { status: number; statusText: string; headers: Record<string, string | string[]>; requestPath: string; method: string },
): unknown {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    const key = name.toLowerCase();
    headers[key] = Array.isArray(value) && key !== "set-cookie" ? value.join(", ") : value;
  }
  return Object.assign(bodyStream(body) as object, {
    statusCode: response.status,
    statusMessage: response.statusText,
    headers,
    httpVersion: "1.1",
    httpVersionMajor: 1,
    httpVersionMinor: 1,
    client: { _httpMessage: { path: response.requestPath, method: response.method } },
  });
}
