// The isolate side of the host HTTP bridge: every outbound request (fetch, axios, the platform
// axios) becomes one host request under the private-address guard, timeouts and size limits.
import { host } from "./bridge.js";
import { append, MapPrototypeClear, MapPrototypeForEach } from "./primordials.js";

export interface RawRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  body?: Uint8Array | string;
  timeoutMs?: number;
  maxResponseBytes?: number;
  maxRedirects?: number;
  /** false: the body as the server sent it (Node's http does not decode gzip). Default true. */
  decompress?: boolean;
}

export interface RawResponse {
  status: number;
  statusText: string;
  headers: Record<string, string | string[]>;
  body: Uint8Array;
  url: string;
  redirected: boolean;
}

export class HttpBridgeError extends Error {
  override name = "HttpBridgeError";
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

let nextId = 1;
const pending = new Map<number, { resolve: (r: RawResponse) => void; reject: (e: Error) => void }>();

export function hostRequest(req: RawRequest): Promise<RawResponse> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    host().http(id, req);
  });
}

/** Called by the host (through the dispatch entry) when a request settles. */
export function settleHttp(id: number, payload: { response?: RawResponse; error?: { code: string; message: string } }): void {
  const waiter = pending.get(id);
  if (!waiter) return;
  pending.delete(id);
  if (payload.response) waiter.resolve(payload.response);
  else waiter.reject(new HttpBridgeError(payload.error?.message ?? "request failed", payload.error?.code ?? "NETWORK"));
}

/** Rejects requests still open when an invocation ends. */
export function abandonHttp(): void {
  // Primordials only: this runs when the invocation ends, after the component's code.
  const waiting: { reject: (e: Error) => void }[] = [];
  MapPrototypeForEach(pending, (waiter) => append(waiting, waiter));
  MapPrototypeClear(pending);
  for (let i = 0; i < waiting.length; i++)
    waiting[i].reject(new HttpBridgeError("the invocation ended before the request completed", "ABORTED"));
}
