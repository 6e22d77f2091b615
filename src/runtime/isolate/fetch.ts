// fetch, Headers, Response, AbortController for the isolate, over the host HTTP bridge.
import { Buffer } from "buffer";
import { DOMException, Event, EventTarget } from "./domEvents.js";
import { HttpBridgeError, hostRequest, type RawResponse } from "./http.js";
import { isNodeFormData, NODE_FORM_BODY } from "./nodeForm.js";
import { concatBytes, utf8Decode, utf8Encode } from "./textCodec.js";
import { URL, URLSearchParams } from "./url.js";
import type { ReadableStream as PonyfillStream } from "web-streams-polyfill";

/* eslint-disable @typescript-eslint/no-require-imports -- Blob and FormData are made only when a body is one (see prelude.ts) */
const blobLib = () => require("./blob.js") as typeof import("./blob.js");
/* eslint-enable @typescript-eslint/no-require-imports */

export class Headers {
  #map = new Map<string, { name: string; values: string[] }>();
  constructor(init?: unknown) {
    if (!init) return;
    if (init instanceof Headers) init.forEach((v, k) => this.append(k, v));
    else if (typeof (init as Iterable<unknown>)[Symbol.iterator] === "function") {
      for (const pair of init as Iterable<[string, string]>) this.append(pair[0], pair[1]);
    } else
      for (const [k, v] of Object.entries(init as Record<string, unknown>)) {
        if (Array.isArray(v)) v.forEach((x) => this.append(k, String(x)));
        else if (v !== undefined) this.append(k, String(v));
      }
  }
  append(name: string, value: string): void {
    const key = String(name).toLowerCase();
    const entry = this.#map.get(key);
    if (entry) entry.values.push(String(value));
    else this.#map.set(key, { name: key, values: [String(value)] });
  }
  set(name: string, value: string): void {
    this.#map.set(String(name).toLowerCase(), { name: String(name).toLowerCase(), values: [String(value)] });
  }
  get(name: string): string | null {
    const entry = this.#map.get(String(name).toLowerCase());
    return entry ? entry.values.join(", ") : null;
  }
  getSetCookie(): string[] {
    return this.#map.get("set-cookie")?.values.slice() ?? [];
  }
  has(name: string): boolean {
    return this.#map.has(String(name).toLowerCase());
  }
  delete(name: string): void {
    this.#map.delete(String(name).toLowerCase());
  }
  forEach(cb: (value: string, name: string, headers: Headers) => void): void {
    for (const [k, v] of [...this.#map.entries()].sort()) cb(v.values.join(", "), k, this);
  }
  *entries(): IterableIterator<[string, string]> {
    for (const [k, v] of [...this.#map.entries()].sort()) yield [k, v.values.join(", ")];
  }
  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  /** @internal */
  _record(): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of this.#map) out[k] = v.values.length === 1 ? v.values[0] : v.values;
    return out;
  }
}

type AbortHandler = ((event: Event) => unknown) | null;

export class AbortSignal extends EventTarget {
  aborted = false;
  reason: unknown = undefined;
  #onabort: AbortHandler = null;
  get onabort(): AbortHandler {
    return this.#onabort;
  }
  set onabort(fn: AbortHandler) {
    if (this.#onabort) this.removeEventListener("abort", this.#onabort);
    this.#onabort = typeof fn === "function" ? fn : null;
    if (this.#onabort) this.addEventListener("abort", this.#onabort);
  }
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }
  /** @internal */
  _abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMException("This operation was aborted", "AbortError");
    this.dispatchEvent(new Event("abort"));
  }
  static abort(reason?: unknown): AbortSignal {
    const s = new AbortSignal();
    s._abort(reason);
    return s;
  }
  static timeout(ms: number): AbortSignal {
    const s = new AbortSignal();
    setTimeout(() => s._abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms);
    return s;
  }
  static any(signals: Iterable<AbortSignal>): AbortSignal {
    const s = new AbortSignal();
    for (const signal of signals) {
      if (signal.aborted) {
        s._abort(signal.reason);
        break;
      }
      signal.addEventListener("abort", () => s._abort(signal.reason), { once: true });
    }
    return s;
  }
}
Object.defineProperty(AbortSignal.prototype, Symbol.toStringTag, { value: "AbortSignal", configurable: true });

export class AbortController {
  readonly signal = new AbortSignal();
  abort(reason?: unknown): void {
    this.signal._abort(reason);
  }
}

/** A stream of `bytes` for a body (the ReadableStream global, made on first use); reading it consumes the body. */
function bodyStream(bytes: () => Uint8Array): PonyfillStream<Uint8Array> {
  return new (globalThis as unknown as { ReadableStream: typeof PonyfillStream }).ReadableStream({
    type: "bytes",
    pull(controller) {
      const b = bytes();
      if (b.length > 0) controller.enqueue(b.slice());
      controller.close();
    },
  });
}

/** Reads a whole ReadableStream of bytes (or strings). */
async function readAll(stream: ReadableStream<unknown>): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk =
      typeof value === "string"
        ? utf8Encode(value)
        : value instanceof Uint8Array
          ? value
          : ArrayBuffer.isView(value)
            ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
            : value instanceof ArrayBuffer
              ? new Uint8Array(value)
              : undefined;
    if (chunk === undefined) throw new TypeError("fetch: a body stream must give Uint8Array chunks");
    chunks.push(chunk);
  }
  return concatBytes(chunks);
}

function isReadableStream(v: unknown): v is ReadableStream<unknown> {
  return Object.prototype.toString.call(v) === "[object ReadableStream]" && typeof (v as ReadableStream).getReader === "function";
}

type BodyInit = unknown;

/** A body given to Response or Request: its bytes and the Content-Type it implies (or a stream, read when sent). */
function extractBody(body: BodyInit): { bytes: Uint8Array; type?: string } | { stream: ReadableStream<unknown> } | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return { bytes: utf8Encode(body), type: "text/plain;charset=UTF-8" };
  if (body instanceof URLSearchParams)
    return { bytes: utf8Encode(body.toString()), type: "application/x-www-form-urlencoded;charset=UTF-8" };
  if (body instanceof Uint8Array) return { bytes: body };
  if (body instanceof ArrayBuffer) return { bytes: new Uint8Array(body) };
  if (ArrayBuffer.isView(body)) return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength) };
  const tag = Object.prototype.toString.call(body);
  if (tag === "[object Blob]" || tag === "[object File]") {
    const { Blob, blobBytes } = blobLib();
    if (body instanceof Blob) return { bytes: blobBytes(body), ...(body.type ? { type: body.type } : {}) };
  }
  if (tag === "[object FormData]") {
    const { FormData, encodeFormData } = blobLib();
    if (body instanceof FormData) {
      const { body: bytes, contentType } = encodeFormData(body);
      return { bytes, type: contentType };
    }
  }
  if (isReadableStream(body)) return { stream: body };
  return { bytes: utf8Encode(String(body)), type: "text/plain;charset=UTF-8" };
}

/** The body methods Response and Request share, over bytes known now or a stream read on demand. */
class Body {
  #bytes: Uint8Array | undefined;
  #source: ReadableStream<unknown> | undefined;
  #stream: ReadableStream<Uint8Array> | undefined;
  #hasBody: boolean;
  bodyUsed = false;
  constructor(bytes: Uint8Array | undefined, source?: ReadableStream<unknown>) {
    this.#bytes = bytes;
    this.#source = source;
    this.#hasBody = bytes !== undefined || source !== undefined;
  }
  /** The body as a ReadableStream (null when there is none), as Node's fetch gives it. */
  get body(): ReadableStream<Uint8Array> | null {
    if (!this.#hasBody) return null;
    if (this.#source) return this.#source as ReadableStream<Uint8Array>;
    this.#stream ??= bodyStream(() => this.#take());
    return this.#stream;
  }
  #take(): Uint8Array {
    if (this.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
    this.bodyUsed = true;
    return this.#bytes ?? new Uint8Array(0);
  }
  /** @internal The bytes of the body, whole. */
  async _consume(): Promise<Uint8Array> {
    if (this.#source) {
      if (this.bodyUsed || this.#source.locked) throw new TypeError("Body is unusable: Body has already been read");
      this.bodyUsed = true;
      return readAll(this.#source);
    }
    if (this.#stream?.locked) throw new TypeError("Body is unusable: Body has already been read");
    return this.#take();
  }
  /** @internal The bytes as they are (not consumed), for clone(); undefined for a stream body. */
  _peek(): Uint8Array | undefined {
    if (this.bodyUsed || this.#source) return undefined;
    return this.#bytes;
  }
  /** @internal */
  _contentType(): string {
    return (this as unknown as { headers: Headers }).headers.get("content-type") ?? "";
  }
  async text(): Promise<string> {
    return utf8Decode(await this._consume());
  }
  async json(): Promise<unknown> {
    return JSON.parse(utf8Decode(await this._consume()));
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    const b = await this._consume();
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }
  async bytes(): Promise<Uint8Array> {
    return (await this._consume()).slice();
  }
  async blob(): Promise<Blob> {
    const { Blob } = blobLib();
    return new Blob([await this._consume()], { type: this._contentType() });
  }
  async formData(): Promise<never> {
    throw new TypeError("formData(): reading a body as FormData is not supported in the Headwater sandbox; use text() or arrayBuffer()");
  }
}

export class Response extends Body {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly url: string;
  readonly redirected: boolean;
  readonly type = "basic";
  constructor(
    body?: unknown,
    init: { status?: number; statusText?: string; headers?: unknown } = {},
    meta?: { url: string; redirected: boolean },
  ) {
    const extracted = extractBody(body);
    super(
      extracted && "bytes" in extracted ? extracted.bytes : meta ? new Uint8Array(0) : undefined,
      extracted && "stream" in extracted ? extracted.stream : undefined,
    );
    this.status = init.status ?? 200;
    this.statusText = init.statusText ?? "";
    this.headers = new Headers(init.headers);
    if (extracted && "type" in extracted && extracted.type && !this.headers.has("content-type"))
      this.headers.set("content-type", extracted.type);
    this.url = meta?.url ?? "";
    this.redirected = meta?.redirected ?? false;
  }
  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }
  async buffer(): Promise<Buffer> {
    return Buffer.from(await this._consume());
  }
  clone(): Response {
    if (this.bodyUsed) throw new TypeError("Response.clone: Body has already been consumed.");
    const bytes = this._peek();
    if (bytes === undefined && this.body !== null) throw new TypeError("Response.clone: a stream body cannot be cloned in the sandbox");
    return new Response(
      bytes?.slice(),
      { status: this.status, statusText: this.statusText, headers: this.headers },
      { url: this.url, redirected: this.redirected },
    );
  }
  static json(data: unknown, init: { status?: number; headers?: unknown } = {}): Response {
    const headers = new Headers(init.headers);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
    return new Response(JSON.stringify(data), { ...init, headers });
  }
  static error(): Response {
    return new Response(null, { status: 0 });
  }
  static redirect(url: string, status = 302): Response {
    return new Response(null, { status, headers: { location: new URL(String(url)).href } });
  }
}
Object.defineProperty(Response.prototype, Symbol.toStringTag, { value: "Response", configurable: true });

interface RequestInit {
  method?: string;
  headers?: unknown;
  body?: unknown;
  redirect?: string;
  signal?: AbortSignal | null;
  timeout?: number;
  [key: string]: unknown;
}

export class Request extends Body {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly signal: AbortSignal;
  readonly redirect: string;
  readonly credentials: string;
  readonly mode: string;
  readonly cache: string;
  readonly keepalive: boolean;
  readonly referrer = "about:client";
  readonly referrerPolicy = "";
  readonly integrity = "";
  readonly destination = "";
  readonly duplex = "half";
  constructor(input: unknown, init: RequestInit = {}) {
    const from = input instanceof Request ? input : undefined;
    const method = String(init.method ?? from?.method ?? "GET").toUpperCase();
    const given = init.body !== undefined ? init.body : from ? (from._peek() ?? (from.body as unknown)) : undefined;
    if (given !== undefined && given !== null && (method === "GET" || method === "HEAD")) {
      throw new TypeError("Request with GET/HEAD method cannot have body.");
    }
    const extracted = extractBody(given);
    super(
      extracted && "bytes" in extracted ? extracted.bytes : undefined,
      extracted && "stream" in extracted ? extracted.stream : undefined,
    );
    this.url = from ? from.url : requestUrl(String((input as { href?: string })?.href ?? input));
    this.method = method;
    this.headers = new Headers(init.headers ?? from?.headers);
    if (extracted && "type" in extracted && extracted.type && !this.headers.has("content-type"))
      this.headers.set("content-type", extracted.type);
    this.redirect = String(init.redirect ?? from?.redirect ?? "follow");
    this.credentials = String(init.credentials ?? from?.credentials ?? "same-origin");
    this.mode = String(init.mode ?? from?.mode ?? "cors");
    this.cache = String(init.cache ?? from?.cache ?? "default");
    this.keepalive = !!(init.keepalive ?? from?.keepalive);
    const signal = init.signal ?? from?.signal;
    this.signal = signal instanceof AbortSignal ? signal : new AbortSignal();
  }
  clone(): Request {
    if (this.bodyUsed) throw new TypeError("Request.clone: Body has already been consumed.");
    return new Request(this);
  }
}
Object.defineProperty(Request.prototype, Symbol.toStringTag, { value: "Request", configurable: true });

/**
 * A Request's URL: absolute URLs as the URL parser writes them. A relative one is kept as given,
 * where Node throws: the sandbox offers `self` as a web worker does, and code that finds `self`
 * probes the Request as a worker's (airtable asks whether "signal" in new Request("")), whose relative URLs
 * resolve against its location. There is no location here, so fetching it fails, naming the URL.
 */
function requestUrl(text: string): string {
  try {
    return new URL(text).href;
  } catch (err) {
    if (/^[a-zA-Z][a-zA-Z\d+.-]*:/.test(text)) throw err;
    return text;
  }
}

export async function fetch(input: unknown, init: RequestInit = {}): Promise<Response> {
  const request = input instanceof Request ? input : undefined;
  const url = request
    ? request.url
    : typeof input === "string"
      ? input
      : String((input as { url?: string; href?: string })?.url ?? (input as { href?: string })?.href ?? input);
  const headers = new Headers(init.headers ?? request?.headers);
  const method = String(init.method ?? request?.method ?? "GET").toUpperCase();
  const redirect = init.redirect ?? request?.redirect;
  const signal = init.signal ?? request?.signal;
  let body: Uint8Array | undefined;
  if (isNodeFormData(init.body)) {
    const form = await init.body[NODE_FORM_BODY]();
    headers.set("content-type", form.contentType);
    body = form.body;
  } else if (init.body !== undefined && init.body !== null) {
    const extracted = extractBody(init.body);
    if (extracted && "type" in extracted && extracted.type && !headers.has("content-type")) headers.set("content-type", extracted.type);
    body = extracted === undefined ? undefined : "stream" in extracted ? await readAll(extracted.stream) : extracted.bytes;
  } else if (request && request.body !== null && init.body === undefined) {
    body = await request._consume();
  }
  if (signal?.aborted) throw signal.reason;
  const sent = hostRequest({
    method,
    url,
    headers: headers._record(),
    ...(body !== undefined ? { body } : {}),
    ...(redirect === "manual" || redirect === "error" ? { maxRedirects: 0 } : {}),
    ...(typeof init.timeout === "number" && init.timeout > 0 ? { timeoutMs: init.timeout } : {}),
  });
  let raw: RawResponse;
  try {
    raw = signal
      ? await Promise.race([
          sent,
          new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
        ])
      : await sent;
  } catch (err) {
    if (err instanceof HttpBridgeError) {
      const e = new TypeError(`fetch failed: ${err.message}`);
      (e as unknown as { cause: unknown }).cause = err;
      throw e;
    }
    throw err;
  }
  if (redirect === "error" && raw.status >= 300 && raw.status < 400) throw new TypeError("fetch failed: unexpected redirect");
  return new Response(
    raw.body,
    { status: raw.status, statusText: raw.statusText, headers: raw.headers },
    { url: raw.url, redirected: raw.redirected },
  );
}

export const nodeFetchModule = Object.assign(fetch, { default: fetch, Headers, Request, Response, AbortController });
