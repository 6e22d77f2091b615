// Headwater's own equivalent of @pipedream/platform (not a copy of it): every name the package
// exports that a component can use at run time. App files spread `sqlProxy.methods` and
// `sqlProp.methods` into their own when they load, and import the file helpers for their actions,
// so a missing name broke every source of those apps (docs/compatibility.md).
import { Buffer } from "buffer";
import axiosClient, { type AxiosRequestConfig } from "./axios.js";
import { parse as parseQuery, stringify as stringifyQuery } from "./querystring.js";
import { bodyStream, fileStream } from "../bodyStream.js";
import { tmpStore } from "../tmpStore.js";
import { isTmpPath, normalizePath } from "../tmpPath.js";
import { contentTypeOf } from "../contentTypes.js";

export const DEFAULT_POLLING_SOURCE_TIMER_INTERVAL = 900;

export class ConfigurationError extends Error {
  override name = "ConfigurationError";
  exposeStack = false;
}

type PlatformRequestConfig = AxiosRequestConfig & { returnFullResponse?: boolean; debug?: boolean; body?: unknown };

/**
 * As the platform reports a failed request: the error's name gains its message, and its message
 * becomes the response body's JSON (what the API said, which is what a run's error should show).
 */
function withResponseBody(error: unknown): unknown {
  const response = (error as { response?: { data?: unknown } } | null)?.response;
  if (response && error instanceof Error) {
    error.name = `${error.name} - ${error.message}`;
    try {
      const text = JSON.stringify(response.data);
      if (typeof text === "string") error.message = text;
    } catch {
      // The body cannot be shown as JSON: the message stays axios's.
    }
  }
  return error;
}

function checkBody(config: PlatformRequestConfig | undefined): void {
  if (config?.body != null) throw new ConfigurationError("unexpected body, use only data instead");
}

/** axios($, config): the response data, or the whole response with returnFullResponse. */
export async function axios($: unknown, config: PlatformRequestConfig): Promise<unknown> {
  void $;
  checkBody(config);
  const { returnFullResponse, debug, ...rest } = config ?? {};
  void debug;
  try {
    const response = await axiosClient.request(rest);
    return returnFullResponse ? response : response.data;
  } catch (error) {
    throw withResponseBody(error);
  }
}

/** `axios.create(config)`: an axios instance whose answers are the response data (the whole response with returnFullResponse). */
axios.create = (defaults: PlatformRequestConfig = {}) => {
  const instance = axiosClient.create(defaults);
  instance.interceptors.request.use((config) => {
    checkBody(config);
    return config;
  });
  instance.interceptors.response.use(
    (response) => ((response.config as PlatformRequestConfig).returnFullResponse ? response : (response.data as typeof response)),
    (error: unknown) => {
      throw withResponseBody(error);
    },
  );
  return instance;
};

export function jsonStringifySafe(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === "object" && v !== null) {
      if (seen.has(v)) return "[Circular]";
      seen.add(v);
    }
    return v;
  });
}

/** A deep copy through JSON, circular references made "[Circular]" (undefined stays undefined). */
export function cloneSafe<T>(value: T): T {
  if (value === undefined) return value;
  return JSON.parse(jsonStringifySafe(value)) as T;
}

/**
 * Gmail sources ask whether an account uses Pipedream's own OAuth client. No account here does:
 * this text is in no client id (an undefined constant would have matched a missing one).
 */
export const PD_OFFICIAL_GMAIL_OAUTH_CLIENT_ID = "headwater: no official Gmail OAuth client";

export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];

/** What `$end` tags its error with. */
export const END_NEEDLE = "__pd_end";

/** Ends the run early by throwing an error tagged with END_NEEDLE (a source's run ends with that error). */
export function $end(message?: string): never {
  const error = new Error(message ?? "$end");
  Object.defineProperty(error, END_NEEDLE, { value: { message, ts: new Date().toISOString() }, enumerable: true });
  throw error;
}

/** Methods an app fills in; until it does, calling one says which is missing. */
function notImplemented(name: string): () => never {
  return () => {
    throw new ConfigurationError(`${name} not implemented`);
  };
}

/** What SQL apps spread into their methods: the client's configuration, a query, its proxy form. */
export const sqlProxy = {
  methods: {
    getClientConfiguration: notImplemented("getClientConfiguration"),
    executeQuery: notImplemented("executeQuery"),
    proxyAdapter: notImplemented("proxyAdapter"),
  },
};

/** What SQL apps spread into their methods for the `sql` prop: the database's schema. */
export const sqlProp = {
  methods: {
    getSchema: notImplemented("getSchema"),
  },
};

/** Query parameters as OAuth 1.0a signs them: RFC 3986 escapes, `!'()*` included. */
function oauthParams(params: unknown): string {
  return stringifyQuery(params).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

/**
 * The request an OAuth 1.0a signature covers: method, the URL with its parameters as they will be
 * sent, and the body's parameters when the body is a form. Sets the config's `paramsSerializer`
 * so the request sends its parameters exactly as signed.
 */
export function transformConfigForOauth(config: AxiosRequestConfig & { params?: unknown }): {
  method: string;
  url: string;
  data?: unknown;
} {
  let url = `${config.baseURL ?? ""}${config.url ?? ""}`;
  const query = config.params == null ? "" : oauthParams(config.params);
  if (query !== "") {
    const hash = url.indexOf("#");
    if (hash >= 0) url = url.slice(0, hash);
    url += (url.includes("?") ? "&" : "?") + query;
  }
  const signed: { method: string; url: string; data?: unknown } = { method: config.method || "get", url };
  const typeHeader = Object.keys(config.headers ?? {}).find((name) => /content-type/i.test(name));
  const form = typeHeader !== undefined && config.headers?.[typeHeader] === "application/x-www-form-urlencoded";
  if (form && config.data && typeof config.data === "object") signed.data = config.data;
  else if (typeof config.data === "string" && (typeHeader === undefined || form)) signed.data = parseQuery(config.data);
  config.paramsSerializer = oauthParams;
  return signed;
}

export interface FileMetadata {
  size?: number;
  contentType?: string;
  lastModified?: Date;
  name?: string;
  etag?: string;
}

function remoteUrl(pathOrUrl: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(pathOrUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:" && url.protocol !== "data:") {
    throw new Error(`Failed to fetch ${pathOrUrl}: only http, https and data URLs can be fetched`);
  }
  return url;
}

/** The extension a file of this content type usually has (the reverse of contentTypeOf's table, for common types). */
function extensionOf(contentType: string): string | undefined {
  for (const ext of [
    "txt",
    "csv",
    "html",
    "css",
    "md",
    "xml",
    "json",
    "js",
    "pdf",
    "zip",
    "png",
    "jpg",
    "gif",
    "webp",
    "svg",
    "mp3",
    "wav",
    "mp4",
  ])
    if (contentTypeOf(`f.${ext}`) === contentType) return ext;
  return undefined;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * A `data:` URL's bytes and what it says of them (RFC 2397: `data:[<type>][;name=<name>][;base64],<data>`):
 * its media type (text/plain by default), and a `name` or `filename` parameter as the file's name,
 * else `file.<extension of the type>`.
 */
function dataUrl(text: string): { body: Uint8Array; metadata: FileMetadata } {
  const comma = text.indexOf(",");
  if (comma < 0) throw new Error("Failed to read the data URL: it has no comma before its data");
  const params = text.slice("data:".length, comma).split(";");
  const base64 = params[params.length - 1].toLowerCase() === "base64";
  if (base64) params.pop();
  const contentType = (params[0] ?? "").trim().toLowerCase() || "text/plain";
  let name: string | undefined;
  for (const param of params.slice(1)) {
    const eq = param.indexOf("=");
    const key = param.slice(0, eq).trim().toLowerCase();
    if (eq > 0 && (key === "name" || key === "filename")) name = safeDecode(param.slice(eq + 1));
  }
  let data: string;
  try {
    data = decodeURIComponent(text.slice(comma + 1));
  } catch {
    throw new Error("Failed to read the data URL: its data is not percent-encoded text");
  }
  const body = Buffer.from(data, base64 ? "base64" : "utf8");
  const ext = extensionOf(contentType.split(";")[0]);
  return {
    body,
    metadata: { size: body.byteLength, contentType, name: name ?? (ext ? `file.${ext}` : "file") },
  };
}

/**
 * A readable stream of a file of the run's /tmp (a relative path is under /tmp) or of an http(s)
 * URL (fetched through the sandbox's guarded outbound HTTP, whole, within its response limit),
 * with what is known of it.
 */
export async function getFileStreamAndMetadata(pathOrUrl: string): Promise<{ stream: unknown; metadata: FileMetadata }> {
  if (typeof pathOrUrl !== "string" || pathOrUrl === "") throw new TypeError("getFileStreamAndMetadata: a file path or URL is required");
  const url = remoteUrl(pathOrUrl);
  if (url === undefined) {
    const path = normalizePath(pathOrUrl);
    const entry = isTmpPath(path) ? tmpStore.get(path) : undefined;
    if (entry?.kind !== "file") throw new Error(`File not found: ${pathOrUrl}`);
    const name = path.slice(path.lastIndexOf("/") + 1);
    return {
      stream: fileStream(path, entry.data),
      metadata: { size: entry.data.byteLength, lastModified: new Date(entry.mtimeMs), name, contentType: contentTypeOf(name) },
    };
  }
  if (url.protocol === "data:") {
    const { body, metadata } = dataUrl(pathOrUrl);
    return { stream: bodyStream(body), metadata };
  }
  const response = await axiosClient.request({
    url: url.toString(),
    method: "GET",
    responseType: "arraybuffer",
    validateStatus: () => true,
  });
  if (response.status < 200 || response.status > 299) {
    throw new Error(`Failed to fetch ${pathOrUrl}: ${response.status} ${response.statusText}`);
  }
  const header = (name: string): string | undefined => {
    const value = response.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  // arraybuffer: a Buffer of the body.
  const body = response.data as Uint8Array;
  const modified = header("last-modified");
  return {
    stream: bodyStream(body),
    metadata: {
      size: body.byteLength,
      contentType: header("content-type"),
      lastModified: modified === undefined ? undefined : new Date(modified),
      name: url.pathname.split("/").pop() || undefined,
      etag: header("etag"),
    },
  };
}

/** `getFileStreamAndMetadata`'s stream alone. */
export async function getFileStream(pathOrUrl: string): Promise<unknown> {
  return (await getFileStreamAndMetadata(pathOrUrl)).stream;
}

export default {
  axios,
  ConfigurationError,
  DEFAULT_POLLING_SOURCE_TIMER_INTERVAL,
  PD_OFFICIAL_GMAIL_OAUTH_CLIENT_ID,
  HTTP_METHODS,
  END_NEEDLE,
  $end,
  cloneSafe,
  jsonStringifySafe,
  sqlProxy,
  sqlProp,
  transformConfigForOauth,
  getFileStream,
  getFileStreamAndMetadata,
};
