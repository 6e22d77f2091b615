// npm `undici`, as the packages that import it use it (cheerio 1.x, @qdrant/js-client-rest,
// fetch-era SDKs): its fetch, Request, Response, Headers and FormData are the sandbox's own (the
// guarded outbound HTTP of the host bridge), and `request()` is answered through that fetch.
// Connection management (Agent, Pool, Client, ProxyAgent, the global dispatcher) has nothing to
// manage here: those classes are accepted and ignored, so code that builds a keep-alive agent
// works. The real undici cannot run in the sandbox (it has no sockets, and it compiles its HTTP
// parser to WebAssembly when it loads).
import { fetch, Headers, Request, Response } from "../fetch.js";
import { FormData } from "../blob.js";

/** What undici's request() answers: the status, lower-case headers and a body mixin. */
interface ResponseData {
  statusCode: number;
  headers: Record<string, string>;
  body: { text(): Promise<string>; json(): Promise<unknown>; arrayBuffer(): Promise<ArrayBuffer> };
  trailers: Record<string, string>;
  opaque: unknown;
  context: Record<string, unknown>;
}

/** undici.request(url, { method, headers, body, query }): fetch underneath, its answer as undici gives it. */
export async function request(
  url: string | URL | { origin: string; path: string },
  options: {
    method?: string;
    headers?: Record<string, string> | string[];
    body?: unknown;
    query?: Record<string, unknown>;
    opaque?: unknown;
  } = {},
): Promise<ResponseData> {
  let target = typeof url === "string" || url instanceof URL ? new URL(String(url)) : new URL(url.path, url.origin);
  if (options.query) {
    target = new URL(target);
    for (const [key, value] of Object.entries(options.query)) if (value !== undefined) target.searchParams.append(key, String(value));
  }
  let headers: Record<string, string> | undefined;
  if (Array.isArray(options.headers)) {
    headers = {};
    for (let i = 0; i + 1 < options.headers.length; i += 2) headers[String(options.headers[i])] = String(options.headers[i + 1]);
  } else headers = options.headers;
  const response = await fetch(target.toString(), {
    method: options.method ?? "GET",
    ...(headers ? { headers } : {}),
    ...(options.body !== undefined && options.body !== null ? { body: options.body } : {}),
  });
  const answered: Record<string, string> = {};
  response.headers.forEach((value: string, name: string) => (answered[name] = value));
  return {
    statusCode: response.status,
    headers: answered,
    body: { text: () => response.text(), json: () => response.json(), arrayBuffer: () => response.arrayBuffer() },
    trailers: {},
    opaque: options.opaque ?? null,
    context: {},
  };
}

/** A dispatcher: options kept, nothing to connect or close. */
export class Dispatcher {
  constructor(readonly options: Record<string, unknown> = {}) {}
  close(): Promise<void> {
    return Promise.resolve();
  }
  destroy(): Promise<void> {
    return Promise.resolve();
  }
  request(options: {
    origin: string;
    path: string;
    method?: string;
    headers?: Record<string, string>;
    body?: unknown;
  }): Promise<ResponseData> {
    return request({ origin: options.origin, path: options.path }, options);
  }
}
export class Agent extends Dispatcher {}
export class Pool extends Dispatcher {}
export class Client extends Dispatcher {}
export class ProxyAgent extends Dispatcher {}
export class RetryAgent extends Dispatcher {}
export class EnvHttpProxyAgent extends Dispatcher {}

let globalDispatcher: Dispatcher = new Agent();
export function setGlobalDispatcher(dispatcher: Dispatcher): void {
  globalDispatcher = dispatcher;
}
export function getGlobalDispatcher(): Dispatcher {
  return globalDispatcher;
}

export { fetch, FormData, Headers, Request, Response };

export default {
  fetch,
  Headers,
  Request,
  Response,
  FormData,
  request,
  Dispatcher,
  Agent,
  Pool,
  Client,
  ProxyAgent,
  RetryAgent,
  EnvHttpProxyAgent,
  setGlobalDispatcher,
  getGlobalDispatcher,
};
