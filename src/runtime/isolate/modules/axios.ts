// An axios-compatible client served by the host HTTP bridge (the npm axios needs Node's http).
import { isNodeFormData, NODE_FORM_BODY, type NodeFormBody } from "../nodeForm.js";
import { Buffer } from "buffer";
import { responseStream } from "../bodyStream.js";
import { HttpBridgeError, hostRequest, type RawResponse } from "../http.js";
import { URLSearchParams } from "../url.js";
import { utf8Decode } from "../textCodec.js";
import { AxiosHeaders } from "./axiosHeaders.js";

export interface AxiosRequestConfig {
  url?: string;
  method?: string;
  baseURL?: string;
  headers?: Record<string, unknown>;
  params?: Record<string, unknown> | URLSearchParams;
  paramsSerializer?: ((params: unknown, options?: FormSerializerOptions) => string) | FormSerializerOptions;
  formSerializer?: FormSerializerOptions;
  data?: unknown;
  timeout?: number;
  auth?: { username: string; password: string };
  responseType?: "json" | "text" | "arraybuffer" | "document" | "blob" | "stream";
  validateStatus?: ((status: number) => boolean) | null;
  maxRedirects?: number;
  maxContentLength?: number;
  transformResponse?: unknown;
  [key: string]: unknown;
}

export interface AxiosResponse<T = unknown> {
  data: T;
  status: number;
  statusText: string;
  headers: Record<string, string | string[]>;
  config: AxiosRequestConfig;
  request: { responseURL: string };
}

export class AxiosError extends Error {
  override name = "AxiosError";
  readonly isAxiosError = true;
  static readonly ERR_BAD_REQUEST = "ERR_BAD_REQUEST";
  static readonly ERR_BAD_RESPONSE = "ERR_BAD_RESPONSE";
  static readonly ECONNABORTED = "ECONNABORTED";
  static readonly ERR_NETWORK = "ERR_NETWORK";
  constructor(
    message: string,
    public code?: string,
    public config?: AxiosRequestConfig,
    public request?: unknown,
    public response?: AxiosResponse,
  ) {
    super(message);
  }
  get status(): number | undefined {
    return this.response?.status;
  }
  toJSON() {
    return { name: this.name, message: this.message, code: this.code, status: this.response?.status };
  }
}

type Interceptor<T> = { fulfilled?: (v: T) => T | Promise<T>; rejected?: (e: unknown) => unknown };

class InterceptorManager<T> {
  handlers: (Interceptor<T> | null)[] = [];
  use(fulfilled?: (v: T) => T | Promise<T>, rejected?: (e: unknown) => unknown): number {
    this.handlers.push({ fulfilled, rejected });
    return this.handlers.length - 1;
  }
  eject(id: number): void {
    this.handlers[id] = null;
  }
  clear(): void {
    this.handlers = [];
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** The keys of `headers` that hold the headers of every request (`common`) or of one method's. */
const HEADER_GROUPS = ["common", "get", "post", "put", "patch", "delete", "head", "options"];

/**
 * Headers merged as axios merges them: a later value wins, and the per-method groups
 * (`headers.post["Content-Type"]`) merge key by key into new objects, so an instance's defaults
 * never share a group with the defaults they came from.
 */
function mergeHeaders(...layers: (Record<string, unknown> | undefined)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer ?? {})) {
      if (HEADER_GROUPS.includes(key) && isPlainObject(value)) out[key] = { ...(isPlainObject(out[key]) ? out[key] : {}), ...value };
      else out[key] = value;
    }
  }
  return out;
}

function mergeConfig(a: AxiosRequestConfig, b: AxiosRequestConfig): AxiosRequestConfig {
  return { ...a, ...b, headers: mergeHeaders(a.headers, b.headers) };
}

/** An instance's default headers: axios's per-method groups, empty, for SDKs that set `defaults.headers.post[…]`. */
const methodGroups = (): Record<string, unknown> => Object.fromEntries(HEADER_GROUPS.map((group) => [group, {}]));

/** axios 1.x's query-string encoder (buildURL): brackets stay percent-encoded since axios 1.12. */
function encodeParam(v: unknown): string {
  return encodeURIComponent(String(v)).replace(/%3A/gi, ":").replace(/%24/g, "$").replace(/%2C/gi, ",").replace(/%20/g, "+");
}

/** The form encoder axios hands a custom `paramsSerializer.encode` as its second argument. */
function encodeForm(v: unknown): string {
  return encodeURIComponent(String(v)).replace(/[!'()~]|%20/g, (c) =>
    c === "%20" ? "+" : "%" + c.charCodeAt(0).toString(16).toUpperCase(),
  );
}

function isURLSearchParams(v: unknown): v is URLSearchParams {
  return v instanceof URLSearchParams || Object.prototype.toString.call(v) === "[object URLSearchParams]";
}

/** The options axios's `paramsSerializer` and `formSerializer` pass to its object flattener. */
export interface FormSerializerOptions {
  dots?: boolean;
  indexes?: boolean | null;
  metaTokens?: boolean;
  encode?: (value: unknown, defaultEncoder: (value: unknown) => string) => string;
  serialize?: (params: unknown, options?: FormSerializerOptions) => string;
  [key: string]: unknown;
}

type FormKey = string | number;
const FORM_MAX_DEPTH = 100;

function isVisitable(v: unknown): boolean {
  return isPlainObject(v) || Array.isArray(v);
}

function stripBrackets(key: string): string {
  return key.endsWith("[]") ? key.slice(0, -2) : key;
}

function formLeaf(value: unknown): unknown {
  if (value === null) return "";
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "boolean") return String(value);
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) return Buffer.from(value as Uint8Array);
  return value;
}

/**
 * Flattens an object into name/value pairs the way axios 1.x's toFormData default visitor does:
 * nested plain objects and arrays as `a[b][0]`, a top-level flat array as `a[]` (or `a[0]` / `a`
 * with `indexes: true` / `null`), `a{}` keys as JSON, null and undefined left out. `bufferAsBase64`
 * is what axios's URL-encoded body serializer adds (under the bare key, as axios does).
 */
function formPairs(data: object, options: FormSerializerOptions, bufferAsBase64: boolean): [string, unknown][] {
  const dots = options.dots ?? false;
  const indexes = options.indexes === undefined ? false : options.indexes;
  const metaTokens = options.metaTokens ?? true;
  const pairs: [string, unknown][] = [];
  const stack: unknown[] = [];
  const render = (path: FormKey[] | undefined, key: FormKey): string =>
    path
      ? [...path, key]
          .map((token, i) => {
            const t = stripBrackets(String(token));
            return !dots && i ? `[${t}]` : t;
          })
          .join(dots ? "." : "")
      : String(key);
  const arrayOf = (value: object): unknown[] | null => {
    if (Array.isArray(value)) return value;
    const length = (value as { length?: unknown }).length;
    return typeof length === "number" ? Array.from({ length }, (_, i) => (value as Record<number, unknown>)[i]) : null;
  };
  // true: walk into the value.
  const visit = (value: unknown, key: FormKey, path: FormKey[] | undefined): boolean => {
    if (bufferAsBase64 && Buffer.isBuffer(value)) {
      pairs.push([String(key), value.toString("base64")]);
      return false;
    }
    if (typeof value === "object" && value !== null && !path) {
      const name = String(key);
      if (name.endsWith("{}")) {
        pairs.push([metaTokens ? name : name.slice(0, -2), JSON.stringify(value)]);
        return false;
      }
      const list = Array.isArray(value) && !value.some(isVisitable) ? value : name.endsWith("[]") ? arrayOf(value) : null;
      if (list) {
        const base = stripBrackets(name);
        list.forEach((el, index) => {
          if (el === undefined || el === null) return;
          pairs.push([indexes === true ? render([base], index) : indexes === null ? base : base + "[]", formLeaf(el)]);
        });
        return false;
      }
    }
    if (isVisitable(value)) return true;
    pairs.push([render(path, key), formLeaf(value)]);
    return false;
  };
  const build = (value: object, path: FormKey[] | undefined, depth: number): void => {
    if (depth > FORM_MAX_DEPTH) {
      throw new AxiosError(`Object is too deeply nested (${depth} levels). Max depth: ${FORM_MAX_DEPTH}`, "ERR_FORM_DATA_DEPTH_EXCEEDED");
    }
    if (stack.includes(value)) throw new Error("Circular reference detected in " + (path ?? []).join("."));
    stack.push(value);
    const entries: [FormKey, unknown][] = Array.isArray(value)
      ? value.map((el, i) => [i, el] as [FormKey, unknown])
      : Buffer.isBuffer(value)
        ? []
        : Object.keys(value).map((k) => [k, (value as Record<string, unknown>)[k]]);
    for (const [key, el] of entries) {
      if (el === undefined || el === null) continue;
      if (visit(el, typeof key === "string" ? key.trim() : key, path)) build(el, path ? [...path, key] : [key], depth + 1);
    }
    stack.pop();
  };
  build(data, undefined, 0);
  return pairs;
}

/** axios 1.x's default params serialization (buildURL over AxiosURLSearchParams). */
function serializeParams(params: unknown, options: FormSerializerOptions = {}): string {
  if (isURLSearchParams(params)) return params.toString();
  if (typeof params !== "object" || params === null) return "";
  const custom = options.encode;
  const encode = custom ? (v: unknown) => custom(v, encodeForm) : encodeParam;
  return formPairs(params, options, false)
    .map(([name, value]) => `${encode(name)}=${encode(value)}`)
    .join("&");
}

function buildUrl(config: AxiosRequestConfig): string {
  let url = config.url ?? "";
  if (config.baseURL && !/^[a-z][a-z\d+\-.]*:\/\//i.test(url)) {
    url = url ? config.baseURL.replace(/\/+$/, "") + "/" + url.replace(/^\/+/, "") : config.baseURL;
  }
  if (config.params) {
    const ser = config.paramsSerializer;
    const options: FormSerializerOptions = typeof ser === "function" ? { serialize: ser } : (ser ?? {});
    const qs = options.serialize ? options.serialize(config.params, options) : serializeParams(config.params, options);
    if (qs) {
      const hashIndex = url.indexOf("#");
      if (hashIndex !== -1) url = url.slice(0, hashIndex);
      url += (url.includes("?") ? "&" : "?") + qs;
    }
  }
  return url;
}

/** A multipart body's Content-Type (with its boundary) replaces any the request gave, whatever its case. */
function replaceContentType(headers: Record<string, string | string[]>, contentType: string): void {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === "content-type") delete headers[key];
  headers["content-type"] = contentType;
}

/** A form-data body, its stream values read; its Content-Type (with its boundary) replaces any given. */
async function nodeFormBody(form: NodeFormBody, headers: Record<string, string | string[]>): Promise<Uint8Array> {
  const { body, contentType } = await form[NODE_FORM_BODY]();
  replaceContentType(headers, contentType);
  return body;
}

function headerLookup(headers: Record<string, string | string[]>, name: string): string | undefined {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

function prepareBody(
  data: unknown,
  headers: Record<string, string | string[]>,
  formSerializer: FormSerializerOptions = {},
): Uint8Array | string | undefined {
  if (data === undefined || data === null) return undefined;
  const setType = (t: string) => {
    if (headerLookup(headers, "content-type") === undefined) headers["content-type"] = t;
  };
  if (typeof data === "string") return data;
  if (isURLSearchParams(data)) {
    setType("application/x-www-form-urlencoded;charset=utf-8");
    return data.toString();
  }
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const tag = Object.prototype.toString.call(data);
  if (tag === "[object FormData]" || tag === "[object Blob]" || tag === "[object File]") {
    // The sandbox's FormData (also what the form-data package is in a bundle) and Blob, made on first use.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- see prelude.ts: require keeps blob.ts lazy
    const blob = require("../blob.js") as typeof import("../blob.js");
    if (data instanceof blob.FormData) {
      // As axios 1.x does for a spec FormData: multipart, with its boundary in the Content-Type.
      const { body, contentType } = blob.encodeFormData(data);
      replaceContentType(headers, contentType);
      return body;
    }
    if (data instanceof blob.Blob) {
      if (data.type) setType(data.type);
      return blob.blobBytes(data);
    }
  }
  // Like axios 1.x: an object sent with a URL-encoded Content-Type goes as a form, not JSON.
  if (typeof data === "object" && (headerLookup(headers, "content-type") ?? "").includes("application/x-www-form-urlencoded")) {
    const form = new URLSearchParams();
    for (const [name, value] of formPairs(data, formSerializer, true)) form.append(name, String(value));
    return form.toString();
  }
  setType("application/json");
  return JSON.stringify(data);
}

/** The headers a request sends: flattened as interceptors see them (requestHeaders), unset ones left out, values as text. */
function normalizeHeaders(input: Record<string, unknown>, method: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(requestHeaders(input, method))) {
    if (v === undefined || v === null || v === false) continue;
    out[k] = Array.isArray(v) ? v.map(String) : String(v);
  }
  return out;
}

function parseData(raw: RawResponse, config: AxiosRequestConfig, request: { url: string; method: string }): unknown {
  const type = config.responseType ?? "json";
  if (type === "arraybuffer" || type === "blob") return Buffer.from(raw.body);
  // The body arrived whole (within the response limit); a stream of it is what Node's axios gives.
  if (type === "stream") {
    const { pathname, search } = new URL(request.url);
    return responseStream(raw.body, { ...raw, requestPath: pathname + search, method: request.method });
  }
  const text = utf8Decode(raw.body);
  if (type === "text" || type === "document") return text;
  if (text.length === 0) return "";
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function dispatch(config: AxiosRequestConfig): Promise<AxiosResponse> {
  const method = (config.method ?? "get").toLowerCase();
  const headers = normalizeHeaders(config.headers ?? {}, method);
  if (headerLookup(headers, "accept") === undefined) headers["accept"] = "application/json, text/plain, */*";
  if (config.auth) {
    const token = Buffer.from(`${config.auth.username ?? ""}:${config.auth.password ?? ""}`).toString("base64");
    headers["authorization"] = `Basic ${token}`;
  }
  const body = isNodeFormData(config.data)
    ? await nodeFormBody(config.data, headers)
    : prepareBody(config.data, headers, config.formSerializer);
  const url = buildUrl(config);
  let raw: RawResponse;
  try {
    raw = await hostRequest({
      method: method.toUpperCase(),
      url,
      headers,
      body,
      ...(config.timeout ? { timeoutMs: config.timeout } : {}),
      ...(config.maxContentLength && config.maxContentLength > 0 ? { maxResponseBytes: config.maxContentLength } : {}),
      ...(config.maxRedirects !== undefined ? { maxRedirects: config.maxRedirects } : {}),
    });
  } catch (err) {
    const e = err as HttpBridgeError;
    const code = e.code === "TIMEOUT" ? "ECONNABORTED" : e.code === "INVALID_URL" ? "ERR_INVALID_URL" : "ERR_NETWORK";
    const out = new AxiosError(e.message, code, config);
    (out as unknown as { cause: unknown }).cause = err;
    throw out;
  }
  const response: AxiosResponse = {
    data: parseData(raw, config, { url, method: method.toUpperCase() }),
    status: raw.status,
    statusText: raw.statusText,
    headers: raw.headers,
    config,
    request: { responseURL: raw.url },
  };
  const validate = config.validateStatus === undefined ? (s: number) => s >= 200 && s < 300 : config.validateStatus;
  if (validate && !validate(raw.status)) {
    throw new AxiosError(
      `Request failed with status code ${raw.status}`,
      raw.status >= 500 ? AxiosError.ERR_BAD_RESPONSE : AxiosError.ERR_BAD_REQUEST,
      config,
      response.request,
      response,
    );
  }
  return response;
}

export interface AxiosInstance {
  (configOrUrl: string | AxiosRequestConfig, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  defaults: AxiosRequestConfig;
  interceptors: { request: InterceptorManager<AxiosRequestConfig>; response: InterceptorManager<AxiosResponse> };
  request(config: AxiosRequestConfig): Promise<AxiosResponse>;
  get(url: string, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  delete(url: string, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  head(url: string, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  options(url: string, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  post(url: string, data?: unknown, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  put(url: string, data?: unknown, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  patch(url: string, data?: unknown, config?: AxiosRequestConfig): Promise<AxiosResponse>;
  create(config?: AxiosRequestConfig): AxiosInstance;
  getUri(config?: AxiosRequestConfig): string;
  [key: string]: unknown;
}

export function createInstance(defaults: AxiosRequestConfig = {}): AxiosInstance {
  const interceptors = { request: new InterceptorManager<AxiosRequestConfig>(), response: new InterceptorManager<AxiosResponse>() };
  const request = async (config: AxiosRequestConfig): Promise<AxiosResponse> => {
    let merged = mergeConfig(instance.defaults, config);
    // As axios does before the request interceptors: the method's headers over the common ones,
    // the request's own over both, as one AxiosHeaders (interceptors call config.headers.set()).
    merged = { ...merged, headers: requestHeaders(merged.headers ?? {}, (merged.method ?? "get").toLowerCase()) };
    for (const h of [...interceptors.request.handlers].reverse()) {
      if (!h?.fulfilled) continue;
      try {
        merged = await h.fulfilled(merged);
      } catch (err) {
        if (h.rejected) h.rejected(err);
        throw err;
      }
    }
    let chain: Promise<AxiosResponse> = dispatch(merged);
    for (const h of interceptors.response.handlers) {
      if (!h) continue;
      chain = chain.then(h.fulfilled ?? ((r) => r), h.rejected as ((e: unknown) => AxiosResponse) | undefined);
    }
    return chain;
  };
  const instance = ((configOrUrl: string | AxiosRequestConfig, config?: AxiosRequestConfig) =>
    typeof configOrUrl === "string" ? request({ ...config, url: configOrUrl }) : request(configOrUrl ?? {})) as AxiosInstance;
  instance.defaults = { ...defaults, headers: mergeHeaders(methodGroups(), defaults.headers) };
  instance.interceptors = interceptors;
  instance.request = (config) => request(config);
  for (const m of ["get", "delete", "head", "options"] as const)
    instance[m] = (url: string, config?: AxiosRequestConfig) => request({ ...config, method: m, url });
  for (const m of ["post", "put", "patch"] as const)
    instance[m] = (url: string, data?: unknown, config?: AxiosRequestConfig) => request({ ...config, method: m, url, data });
  instance.create = (config?: AxiosRequestConfig) => createInstance(mergeConfig(instance.defaults, config ?? {}));
  instance.getUri = (config?: AxiosRequestConfig) => buildUrl(mergeConfig(instance.defaults, config ?? {}));
  instance["isAxiosError"] = isAxiosError;
  instance["AxiosError"] = AxiosError;
  instance["all"] = (ps: Promise<unknown>[]) => Promise.all(ps);
  instance["spread"] = (fn: (...args: unknown[]) => unknown) => (arr: unknown[]) => fn(...arr);
  instance["isCancel"] = (value: unknown) => value instanceof CanceledError;
  instance["AxiosHeaders"] = AxiosHeaders;
  instance["CanceledError"] = CanceledError;
  instance["Cancel"] = CanceledError;
  instance["CancelToken"] = CancelToken;
  instance["HttpStatusCode"] = HttpStatusCode;
  instance["mergeConfig"] = mergeConfig;
  instance["Axios"] = Axios;
  instance["VERSION"] = AXIOS_VERSION;
  instance["toFormData"] = toFormData;
  instance["formToJSON"] = formToJSON;
  instance["getAdapter"] = () => {
    throw new Error("axios adapters are not available in the sandbox: requests go through Headwater's HTTP bridge");
  };
  instance["default"] = instance;
  return instance;
}

/** The axios 1.x version whose behaviour (wire format, errors, headers) this module follows. */
const AXIOS_VERSION = "1.12.2";

/** A request's headers as axios 1.x hands them to interceptors: groups flattened into one AxiosHeaders. */
function requestHeaders(headers: Record<string, unknown>, method: string): AxiosHeaders {
  const common = headers["common"];
  const specific = headers[method];
  const own = Object.fromEntries(Object.entries(headers).filter(([key]) => !HEADER_GROUPS.includes(key)));
  return AxiosHeaders.concat(isPlainObject(common) ? common : {}, isPlainObject(specific) ? specific : {}, own);
}

/** A request cancelled (axios's CanceledError; `axios.isCancel` tells it apart). */
export class CanceledError extends AxiosError {
  override name = "CanceledError";
  readonly __CANCEL__ = true;
  constructor(message?: string, config?: AxiosRequestConfig, request?: unknown) {
    super(message ?? "canceled", "ERR_CANCELED", config, request);
  }
}

/**
 * axios's legacy cancellation token. The bridge cannot abort a request in flight, so a cancelled
 * token only marks it: `throwIfRequested()` throws the CanceledError, as axios does.
 */
export class CancelToken {
  reason: CanceledError | undefined;
  readonly promise: Promise<CanceledError>;
  #resolve!: (reason: CanceledError) => void;
  constructor(executor: (cancel: (message?: string) => void) => void) {
    if (typeof executor !== "function") throw new TypeError("executor must be a function.");
    this.promise = new Promise((resolve) => (this.#resolve = resolve));
    executor((message) => {
      if (this.reason) return;
      this.reason = new CanceledError(message);
      this.#resolve(this.reason);
    });
  }
  throwIfRequested(): void {
    if (this.reason) throw this.reason;
  }
  static source(): { token: CancelToken; cancel: (message?: string) => void } {
    let cancel!: (message?: string) => void;
    const token = new CancelToken((c) => (cancel = c));
    return { token, cancel };
  }
}

/** axios's HttpStatusCode: names to codes and codes to names. */
const HttpStatusCode: Record<string, number | string> = {};
for (const [name, code] of Object.entries({
  Continue: 100,
  SwitchingProtocols: 101,
  Processing: 102,
  EarlyHints: 103,
  Ok: 200,
  Created: 201,
  Accepted: 202,
  NonAuthoritativeInformation: 203,
  NoContent: 204,
  ResetContent: 205,
  PartialContent: 206,
  MultiStatus: 207,
  AlreadyReported: 208,
  ImUsed: 226,
  MultipleChoices: 300,
  MovedPermanently: 301,
  Found: 302,
  SeeOther: 303,
  NotModified: 304,
  UseProxy: 305,
  Unused: 306,
  TemporaryRedirect: 307,
  PermanentRedirect: 308,
  BadRequest: 400,
  Unauthorized: 401,
  PaymentRequired: 402,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  ProxyAuthenticationRequired: 407,
  RequestTimeout: 408,
  Conflict: 409,
  Gone: 410,
  LengthRequired: 411,
  PreconditionFailed: 412,
  PayloadTooLarge: 413,
  UriTooLong: 414,
  UnsupportedMediaType: 415,
  RangeNotSatisfiable: 416,
  ExpectationFailed: 417,
  ImATeapot: 418,
  MisdirectedRequest: 421,
  UnprocessableEntity: 422,
  Locked: 423,
  FailedDependency: 424,
  TooEarly: 425,
  UpgradeRequired: 426,
  PreconditionRequired: 428,
  TooManyRequests: 429,
  RequestHeaderFieldsTooLarge: 431,
  UnavailableForLegalReasons: 451,
  InternalServerError: 500,
  NotImplemented: 501,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504,
  HttpVersionNotSupported: 505,
  VariantAlsoNegotiates: 506,
  InsufficientStorage: 507,
  LoopDetected: 508,
  NotExtended: 510,
  NetworkAuthenticationRequired: 511,
})) {
  HttpStatusCode[name] = code;
  HttpStatusCode[code] = name;
}

/** axios's Axios class: `new Axios(config)` is an instance with those defaults. */
function Axios(this: unknown, config?: AxiosRequestConfig): AxiosInstance {
  return createInstance(config ?? {});
}

/** axios.toFormData(object, formData?): the object's fields, flattened as axios flattens them, in a FormData. */
function toFormData(data: object, formData?: { append(name: string, value: unknown): void }, options: FormSerializerOptions = {}) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- see prelude.ts: require keeps blob.ts lazy
  const target = formData ?? new (require("../blob.js") as typeof import("../blob.js")).FormData();
  for (const [name, value] of formPairs(data, options, false)) {
    target.append(name, Buffer.isBuffer(value) ? new Blob([value]) : value);
  }
  return target;
}

/** axios.formToJSON(formData): `a[b]` and `a.b` names back into nested objects, repeated names into arrays. */
function formToJSON(form: { forEach?: (fn: (value: unknown, name: string) => void) => void }): Record<string, unknown> | null {
  if (typeof form?.forEach !== "function") return null;
  const out: Record<string, unknown> = {};
  form.forEach((value, name) => {
    const path = (name.match(/\w+|\[(\w*)]/g) ?? [name]).map((token) => (token === "[]" ? "" : token.replace(/^\[|]$/g, "")));
    let node: Record<string, unknown> | unknown[] = out;
    path.forEach((key, i) => {
      const last = i === path.length - 1;
      const container = node as Record<string, unknown>;
      const slot = key === "" && Array.isArray(node) ? String(node.length) : key;
      if (last) {
        const existing = container[slot];
        container[slot] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
        return;
      }
      const nextIsIndex = path[i + 1] === "" || /^\d+$/.test(path[i + 1]);
      container[slot] ??= nextIsIndex ? [] : {};
      node = container[slot] as Record<string, unknown>;
    });
  });
  return out;
}

export function isAxiosError(v: unknown): v is AxiosError {
  return typeof v === "object" && v !== null && (v as { isAxiosError?: unknown }).isAxiosError === true;
}

const axios = createInstance();
export default axios;
