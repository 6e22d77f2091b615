// An axios-compatible client served by the host HTTP bridge (the npm axios needs Node's http).
import { Buffer } from "buffer";
import { bodyStream } from "../bodyStream.js";
import { HttpBridgeError, hostRequest, type RawResponse } from "../http.js";
import { URLSearchParams } from "../url.js";
import { utf8Decode } from "../textCodec.js";

export interface AxiosRequestConfig {
  url?: string;
  method?: string;
  baseURL?: string;
  headers?: Record<string, unknown>;
  params?: Record<string, unknown> | URLSearchParams;
  paramsSerializer?: ((params: unknown) => string) | { serialize?: (params: unknown) => string };
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

function mergeConfig(a: AxiosRequestConfig, b: AxiosRequestConfig): AxiosRequestConfig {
  return { ...a, ...b, headers: { ...(a.headers ?? {}), ...(b.headers ?? {}) } };
}

function encodeParam(v: string): string {
  return encodeURIComponent(v)
    .replace(/%3A/gi, ":")
    .replace(/%24/g, "$")
    .replace(/%2C/gi, ",")
    .replace(/%20/g, "+")
    .replace(/%5B/gi, "[")
    .replace(/%5D/gi, "]");
}

function serializeParams(params: unknown): string {
  if (params instanceof URLSearchParams) return params.toString();
  if (!isPlainObject(params)) return "";
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    const name = Array.isArray(value) ? `${key}[]` : key;
    for (const item of values) {
      const text =
        item instanceof Date ? item.toISOString() : typeof item === "object" && item !== null ? JSON.stringify(item) : String(item);
      parts.push(`${encodeParam(name)}=${encodeParam(text)}`);
    }
  }
  return parts.join("&");
}

function buildUrl(config: AxiosRequestConfig): string {
  let url = config.url ?? "";
  if (config.baseURL && !/^[a-z][a-z\d+\-.]*:\/\//i.test(url)) {
    url = url ? config.baseURL.replace(/\/+$/, "") + "/" + url.replace(/^\/+/, "") : config.baseURL;
  }
  if (config.params) {
    const ser = config.paramsSerializer;
    const qs =
      typeof ser === "function" ? ser(config.params) : ser?.serialize ? ser.serialize(config.params) : serializeParams(config.params);
    if (qs) {
      const hashIndex = url.indexOf("#");
      if (hashIndex !== -1) url = url.slice(0, hashIndex);
      url += (url.includes("?") ? "&" : "?") + qs;
    }
  }
  return url;
}

function headerLookup(headers: Record<string, string | string[]>, name: string): string | undefined {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}

function prepareBody(data: unknown, headers: Record<string, string | string[]>): Uint8Array | string | undefined {
  if (data === undefined || data === null) return undefined;
  const setType = (t: string) => {
    if (headerLookup(headers, "content-type") === undefined) headers["content-type"] = t;
  };
  if (typeof data === "string") return data;
  if (data instanceof URLSearchParams) {
    setType("application/x-www-form-urlencoded;charset=utf-8");
    return data.toString();
  }
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  setType("application/json");
  return JSON.stringify(data);
}

function normalizeHeaders(input: Record<string, unknown>, method: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const methods = ["common", "get", "post", "put", "patch", "delete", "head", "options"];
  const flat: Record<string, unknown> = {};
  const common = input["common"];
  if (isPlainObject(common)) Object.assign(flat, common);
  const specific = input[method];
  if (isPlainObject(specific)) Object.assign(flat, specific);
  for (const [k, v] of Object.entries(input)) if (!methods.includes(k)) flat[k] = v;
  for (const [k, v] of Object.entries(flat)) {
    if (v === undefined || v === null || v === false) continue;
    out[k] = Array.isArray(v) ? v.map(String) : String(v);
  }
  return out;
}

function parseData(raw: RawResponse, config: AxiosRequestConfig): unknown {
  const type = config.responseType ?? "json";
  if (type === "arraybuffer" || type === "blob") return Buffer.from(raw.body);
  // The body arrived whole (within the response limit); a stream of it is what Node's axios gives.
  if (type === "stream") return bodyStream(raw.body);
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
  const body = prepareBody(config.data, headers);
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
    data: parseData(raw, config),
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
  instance.defaults = { ...defaults, headers: { ...(defaults.headers ?? {}) } };
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
  instance["isCancel"] = () => false;
  instance["default"] = instance;
  return instance;
}

export function isAxiosError(v: unknown): v is AxiosError {
  return typeof v === "object" && v !== null && (v as { isAxiosError?: unknown }).isAxiosError === true;
}

const axios = createInstance();
export default axios;
