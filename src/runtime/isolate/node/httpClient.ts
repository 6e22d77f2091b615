// Node's `http` and `https` clients over the host HTTP bridge: every request goes through the
// runner's guarded outbound client (private addresses refused, timeouts, size limits). As in Node,
// redirects are not followed and bodies arrive as the server sent them (gzip included); the
// response is a readable stream. There is no server side: a component listens through its
// HTTP interface instead.
import { Buffer } from "buffer";
import EventEmitter from "events";
import Stream from "stream";
import { internals } from "./internals.js";

type Headers = Record<string, string | string[]>;
type Callback = (res: IncomingMessage) => void;

export const METHODS = ["ACL", "BIND", "CHECKOUT", "CONNECT", "COPY", "DELETE", "GET", "HEAD", "LINK", "LOCK", "M-SEARCH", "MERGE"]
  .concat(["MKACTIVITY", "MKCALENDAR", "MKCOL", "MOVE", "NOTIFY", "OPTIONS", "PATCH", "POST", "PROPFIND", "PROPPATCH", "PURGE", "PUT"])
  .concat(["REBIND", "REPORT", "SEARCH", "SOURCE", "SUBSCRIBE", "TRACE", "UNBIND", "UNLINK", "UNLOCK", "UNSUBSCRIBE"]);

export const STATUS_CODES: Record<number, string> = {
  100: "Continue",
  101: "Switching Protocols",
  200: "OK",
  201: "Created",
  202: "Accepted",
  203: "Non-Authoritative Information",
  204: "No Content",
  205: "Reset Content",
  206: "Partial Content",
  300: "Multiple Choices",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Payload Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  416: "Range Not Satisfiable",
  417: "Expectation Failed",
  418: "I'm a Teapot",
  422: "Unprocessable Entity",
  425: "Too Early",
  426: "Upgrade Required",
  428: "Precondition Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  451: "Unavailable For Legal Reasons",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
};

/**
 * Connection pooling is the host's: an Agent only carries options. Like Node's it is an
 * EventEmitter with (always empty) socket pools, so agents that subclass it (agentkeepalive, which
 * openai's Node build uses) construct; no socket ever comes to it.
 */
export class Agent extends EventEmitter {
  readonly options: Record<string, unknown>;
  readonly defaultPort: number;
  readonly protocol: string;
  readonly keepAlive: boolean;
  readonly maxSockets: number;
  readonly maxFreeSockets: number;
  readonly sockets: Record<string, unknown[]> = {};
  readonly freeSockets: Record<string, unknown[]> = {};
  readonly requests: Record<string, unknown[]> = {};
  constructor(options: Record<string, unknown> = {}, protocol = "http:") {
    super();
    this.options = { path: null, ...options };
    this.protocol = protocol;
    this.defaultPort = protocol === "https:" ? 443 : 80;
    this.keepAlive = options.keepAlive === true;
    this.maxSockets = typeof options.maxSockets === "number" ? options.maxSockets : Infinity;
    this.maxFreeSockets = typeof options.maxFreeSockets === "number" ? options.maxFreeSockets : 256;
  }
  getName(options: { host?: string; port?: number | string; localAddress?: string } = {}): string {
    return `${options.host ?? "localhost"}:${options.port ?? ""}:${options.localAddress ?? ""}`;
  }
  destroy(): void {}
}

const { Readable, Writable } = Stream;

export class IncomingMessage extends Readable {
  statusCode: number;
  statusMessage: string;
  headers: Record<string, string | string[]>;
  rawHeaders: string[];
  trailers: Record<string, string> = {};
  rawTrailers: string[] = [];
  httpVersion = "1.1";
  httpVersionMajor = 1;
  httpVersionMinor = 1;
  method: string | null = null;
  url: string;
  complete = false;
  aborted = false;
  socket = null;
  #body: Buffer | undefined;

  constructor(raw: { status: number; statusText: string; headers: Headers; body: Uint8Array; url: string }) {
    super();
    this.statusCode = raw.status;
    this.statusMessage = raw.statusText || STATUS_CODES[raw.status] || "";
    this.headers = {};
    this.rawHeaders = [];
    for (const [name, value] of Object.entries(raw.headers)) {
      const key = name.toLowerCase();
      // Node joins repeated headers with ", " except set-cookie, which stays an array.
      this.headers[key] = Array.isArray(value) ? (key === "set-cookie" ? value.slice() : value.join(", ")) : value;
      for (const v of Array.isArray(value) ? value : [value]) this.rawHeaders.push(name, v);
    }
    this.url = raw.url;
    this.#body = Buffer.from(raw.body.buffer, raw.body.byteOffset, raw.body.byteLength);
  }

  override _read(): void {
    const body = this.#body;
    if (body === undefined) return;
    this.#body = undefined;
    if (body.byteLength > 0) this.push(body);
    this.complete = true;
    this.push(null);
  }

  setTimeout(_ms: number, callback?: () => void): this {
    void callback;
    return this;
  }
}

export interface RequestOptions {
  protocol?: string | null;
  host?: string | null;
  hostname?: string | null;
  port?: number | string | null;
  path?: string | null;
  method?: string;
  headers?: Record<string, unknown> | string[];
  auth?: string | null;
  timeout?: number;
  agent?: unknown;
  signal?: { aborted: boolean; reason?: unknown; addEventListener(type: string, fn: () => void): void };
  [key: string]: unknown;
}

const BRIDGE_CODES: Record<string, string> = {
  BLOCKED_ADDRESS: "EACCES",
  DNS_FAILED: "ENOTFOUND",
  TIMEOUT: "ETIMEDOUT",
  NETWORK: "ECONNREFUSED",
  INVALID_URL: "ERR_INVALID_URL",
  RESPONSE_TOO_LARGE: "ERR_RESPONSE_TOO_LARGE",
  ABORTED: "ECONNRESET",
};

function targetUrl(options: RequestOptions, defaultProtocol: string): string {
  const protocol = options.protocol || defaultProtocol;
  if (protocol !== "http:" && protocol !== "https:") {
    throw Object.assign(new TypeError(`Protocol "${protocol}" not supported. Expected "${defaultProtocol}"`), {
      code: "ERR_INVALID_PROTOCOL",
    });
  }
  let host = options.hostname || (options.host ? String(options.host).replace(/:\d+$/, "") : "localhost");
  if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  const port = options.port ?? (options.host && /:(\d+)$/.exec(String(options.host))?.[1]) ?? null;
  const auth = options.auth ? `${options.auth.split(":").map(encodeURIComponent).join(":")}@` : "";
  const path = options.path || "/";
  return `${protocol}//${auth}${host}${port ? `:${port}` : ""}${path.startsWith("/") ? path : `/${path}`}`;
}

export class ClientRequest extends Writable {
  readonly method: string;
  readonly path: string;
  readonly host: string;
  readonly protocol: string;
  aborted = false;
  reusedSocket = false;
  maxHeadersCount: number | null = null;
  socket = null;
  #url: string;
  #headers = new Map<string, { name: string; value: string | string[] }>();
  #chunks: Buffer[] = [];
  #timeoutMs: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;

  constructor(options: RequestOptions, callback: Callback | undefined, defaultProtocol: string) {
    // The request lives on after its body is written: it still waits for the response.
    super({ autoDestroy: false, emitClose: false });
    this.#url = targetUrl(options, defaultProtocol);
    this.method = String(options.method ?? "GET").toUpperCase();
    this.protocol = options.protocol || defaultProtocol;
    this.host = options.hostname || String(options.host ?? "localhost");
    this.path = options.path || "/";
    const given = options.headers;
    if (Array.isArray(given)) for (let i = 0; i + 1 < given.length; i += 2) this.setHeader(String(given[i]), String(given[i + 1]));
    else if (given) for (const [k, v] of Object.entries(given)) if (v !== undefined) this.setHeader(k, v);
    if (typeof options.timeout === "number" && options.timeout > 0) this.setTimeout(options.timeout);
    if (callback) this.once("response", callback);
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) queueMicrotask(() => this.destroy(abortError(signal.reason)));
      else signal.addEventListener("abort", () => this.destroy(abortError(signal.reason)));
    }
  }

  setHeader(name: string, value: unknown): this {
    this.#headers.set(String(name).toLowerCase(), {
      name: String(name),
      value: Array.isArray(value) ? value.map(String) : String(value),
    });
    return this;
  }
  getHeader(name: string): string | string[] | undefined {
    return this.#headers.get(String(name).toLowerCase())?.value;
  }
  getHeaders(): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of this.#headers) out[k] = v.value;
    return out;
  }
  getHeaderNames(): string[] {
    return [...this.#headers.keys()];
  }
  hasHeader(name: string): boolean {
    return this.#headers.has(String(name).toLowerCase());
  }
  removeHeader(name: string): void {
    this.#headers.delete(String(name).toLowerCase());
  }
  flushHeaders(): void {}
  setNoDelay(): void {}
  setSocketKeepAlive(): void {}

  /** As Node: emits 'timeout' after `ms` without a response; the caller decides to abort. */
  setTimeout(ms: number, callback?: () => void): this {
    this.#timeoutMs = ms;
    if (callback) this.once("timeout", callback);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (ms > 0 && !this.#done) this.#timer = setTimeout(() => this.emit("timeout"), ms);
    return this;
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit("abort");
    this.destroy();
  }

  override _write(chunk: unknown, encoding: string, callback: (error?: Error | null) => void): void {
    this.#chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, encoding as BufferEncoding));
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    callback();
    this.#send();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#finish();
    callback(error);
  }

  #finish(): void {
    this.#done = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #send(): void {
    const { hostRequest, HttpBridgeError } = internals();
    const body = this.#chunks.length > 0 ? new Uint8Array(Buffer.concat(this.#chunks)) : undefined;
    this.#chunks = [];
    hostRequest({
      method: this.method,
      url: this.#url,
      headers: this.getHeaders(),
      ...(body !== undefined ? { body } : {}),
      // Node's http neither follows redirects nor decodes bodies.
      maxRedirects: 0,
      decompress: false,
      ...(this.#timeoutMs !== undefined ? { timeoutMs: this.#timeoutMs } : {}),
    }).then(
      (raw) => {
        if (this.destroyed || this.aborted) return;
        this.#finish();
        const res = new IncomingMessage(raw);
        if (this.listenerCount("response") > 0) this.emit("response", res);
        else res.resume();
        this.emit("close");
      },
      (err: unknown) => {
        if (this.destroyed || this.aborted) return;
        const bridge = err instanceof HttpBridgeError ? err : undefined;
        const error = Object.assign(new Error(bridge ? bridge.message : String((err as Error)?.message ?? err)), {
          code: bridge ? (BRIDGE_CODES[bridge.code] ?? bridge.code) : "ECONNRESET",
          ...(bridge ? { cause: bridge } : {}),
        });
        this.destroy(error);
      },
    );
  }
}

function abortError(reason: unknown): Error {
  return Object.assign(new Error("The operation was aborted"), { name: "AbortError", code: "ABORT_ERR", cause: reason });
}

/** request(url[, options][, callback]) or request(options[, callback]), as Node accepts them. */
function normalize(args: unknown[], defaultProtocol: string): { options: RequestOptions; callback: Callback | undefined } {
  let options: RequestOptions = {};
  let i = 0;
  const first = args[0];
  if (typeof first === "string" || (typeof first === "object" && first !== null && "href" in first && "searchParams" in first)) {
    const u = new URL(String(typeof first === "string" ? first : (first as URL).href));
    options = {
      protocol: u.protocol,
      hostname: u.hostname.replace(/^\[|\]$/g, ""),
      port: u.port || null,
      path: u.pathname + u.search,
      ...(u.username ? { auth: `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}` } : {}),
    };
    i = 1;
  }
  if (typeof args[i] === "object" && args[i] !== null) {
    options = { ...options, ...(args[i] as RequestOptions) };
    i++;
  }
  const callback = typeof args[i] === "function" ? (args[i] as Callback) : undefined;
  if (!options.protocol) options.protocol = defaultProtocol;
  return { options, callback };
}

/** The `http` (or `https`) module for a default protocol. */
export function clientModule(defaultProtocol: "http:" | "https:") {
  const globalAgent = new Agent({}, defaultProtocol);
  const request = (...args: unknown[]): ClientRequest => {
    const { options, callback } = normalize(args, defaultProtocol);
    return new ClientRequest(options, callback, defaultProtocol);
  };
  const get = (...args: unknown[]): ClientRequest => {
    const req = request(...args);
    req.end();
    return req;
  };
  const module = defaultProtocol.slice(0, -1);
  const unavailable = () => {
    throw new Error(`${module}.createServer is not available in the sandbox: use an HTTP interface prop ($.interface.http)`);
  };
  /**
   * A server-side class of Node's: there is no instance of it in the sandbox, but libraries test
   * values against it (got: `body instanceof http.ServerResponse`), so it must be a class.
   */
  const serverSide = (name: string) =>
    class {
      constructor() {
        throw new Error(`${module}.${name} is not available in the sandbox: use an HTTP interface prop ($.interface.http)`);
      }
    };
  return {
    request,
    get,
    Agent,
    globalAgent,
    ClientRequest,
    IncomingMessage,
    METHODS,
    STATUS_CODES,
    maxHeaderSize: 16384,
    createServer: unavailable,
    Server: serverSide("Server"),
    ServerResponse: serverSide("ServerResponse"),
    validateHeaderName: (name: string) => {
      if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(String(name))) throw new TypeError(`Header name must be a valid HTTP token ["${name}"]`);
    },
    validateHeaderValue: (name: string, value: unknown) => {
      if (value === undefined || /[\r\n\0]/.test(String(value)))
        throw new TypeError(`Invalid value "${String(value)}" for header "${name}"`);
    },
  };
}
