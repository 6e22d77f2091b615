// fetch, Headers, Response, AbortController for the isolate, over the host HTTP bridge.
import { Buffer } from "buffer";
import { HttpBridgeError, hostRequest, type RawResponse } from "./http.js";
import { utf8Decode, utf8Encode } from "./textCodec.js";
import { URLSearchParams } from "./url.js";

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

type EventListenerFn = (event: { type: string; target: unknown }) => void;

export class AbortSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: EventListenerFn | null = null;
  #listeners: EventListenerFn[] = [];
  addEventListener(type: string, fn: EventListenerFn): void {
    if (type === "abort") this.#listeners.push(fn);
  }
  removeEventListener(type: string, fn: EventListenerFn): void {
    if (type === "abort") this.#listeners = this.#listeners.filter((f) => f !== fn);
  }
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }
  /** @internal */
  _abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMExceptionLike("This operation was aborted", "AbortError");
    const event = { type: "abort", target: this };
    this.onabort?.(event);
    for (const fn of this.#listeners) fn(event);
  }
  static abort(reason?: unknown): AbortSignal {
    const s = new AbortSignal();
    s._abort(reason);
    return s;
  }
  static timeout(ms: number): AbortSignal {
    const s = new AbortSignal();
    setTimeout(() => s._abort(new DOMExceptionLike("The operation was aborted due to timeout", "TimeoutError")), ms);
    return s;
  }
}

export class AbortController {
  readonly signal = new AbortSignal();
  abort(reason?: unknown): void {
    this.signal._abort(reason);
  }
}

export class DOMExceptionLike extends Error {
  constructor(
    message: string,
    override name: string,
  ) {
    super(message);
  }
}

export class Response {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly url: string;
  readonly redirected: boolean;
  readonly type = "basic";
  #body: Uint8Array;
  bodyUsed = false;
  constructor(
    body?: unknown,
    init: { status?: number; statusText?: string; headers?: unknown } = {},
    meta?: { url: string; redirected: boolean },
  ) {
    this.#body =
      body === undefined || body === null
        ? new Uint8Array(0)
        : typeof body === "string"
          ? utf8Encode(body)
          : body instanceof Uint8Array
            ? body
            : utf8Encode(String(body));
    this.status = init.status ?? 200;
    this.statusText = init.statusText ?? "";
    this.headers = new Headers(init.headers);
    this.url = meta?.url ?? "";
    this.redirected = meta?.redirected ?? false;
  }
  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }
  #consume(): Uint8Array {
    if (this.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
    this.bodyUsed = true;
    return this.#body;
  }
  async text(): Promise<string> {
    return utf8Decode(this.#consume());
  }
  async json(): Promise<unknown> {
    return JSON.parse(utf8Decode(this.#consume()));
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    const b = this.#consume();
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }
  async buffer(): Promise<Buffer> {
    return Buffer.from(this.#consume());
  }
  clone(): Response {
    if (this.bodyUsed) throw new TypeError("Response.clone: Body has already been consumed.");
    return new Response(
      this.#body.slice(),
      { status: this.status, statusText: this.statusText, headers: this.headers },
      { url: this.url, redirected: this.redirected },
    );
  }
  static json(data: unknown, init: { status?: number; headers?: unknown } = {}): Response {
    const headers = new Headers(init.headers);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
    return new Response(JSON.stringify(data), { ...init, headers });
  }
}

function bodyOf(body: unknown, headers: Headers): Uint8Array | string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") {
    if (!headers.has("content-type")) headers.set("content-type", "text/plain;charset=UTF-8");
    return body;
  }
  if (body instanceof URLSearchParams) {
    if (!headers.has("content-type")) headers.set("content-type", "application/x-www-form-urlencoded;charset=UTF-8");
    return body.toString();
  }
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  return String(body);
}

export async function fetch(
  input: unknown,
  init: { method?: string; headers?: unknown; body?: unknown; redirect?: string; signal?: AbortSignal; timeout?: number } = {},
): Promise<Response> {
  const url =
    typeof input === "string"
      ? input
      : String((input as { url?: string; href?: string })?.url ?? (input as { href?: string })?.href ?? input);
  const headers = new Headers(init.headers);
  const body = bodyOf(init.body, headers);
  if (init.signal?.aborted) throw init.signal.reason;
  const request = hostRequest({
    method: (init.method ?? "GET").toUpperCase(),
    url,
    headers: headers._record(),
    ...(body !== undefined ? { body } : {}),
    ...(init.redirect === "manual" || init.redirect === "error" ? { maxRedirects: 0 } : {}),
    ...(typeof init.timeout === "number" && init.timeout > 0 ? { timeoutMs: init.timeout } : {}),
  });
  let raw: RawResponse;
  try {
    raw = init.signal
      ? await Promise.race([
          request,
          new Promise<never>((_, reject) => init.signal!.addEventListener("abort", () => reject(init.signal!.reason))),
        ])
      : await request;
  } catch (err) {
    if (err instanceof HttpBridgeError) {
      const e = new TypeError(`fetch failed: ${err.message}`);
      (e as unknown as { cause: unknown }).cause = err;
      throw e;
    }
    throw err;
  }
  if (init.redirect === "error" && raw.status >= 300 && raw.status < 400) throw new TypeError("fetch failed: unexpected redirect");
  return new Response(
    raw.body,
    { status: raw.status, statusText: raw.statusText, headers: raw.headers },
    { url: raw.url, redirected: raw.redirected },
  );
}

export const nodeFetchModule = Object.assign(fetch, { default: fetch, Headers, Response, AbortController });
