// The isolate side of the host HTTP bridge: every outbound request (fetch, axios, the platform
// axios) becomes one host request under the private-address guard, timeouts and size limits.
import { host } from "./bridge.js";
import {
  append,
  MapPrototypeClear,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MapPrototypeSet,
  MapPrototypeSize,
  pinConstructor,
  PromiseCtor,
} from "./primordials.js";
import { clearPlatformTimer, platformTimer } from "./timers.js";

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
    MapPrototypeSet(pending, id, { resolve, reject });
    host().http(id, req);
  });
}

/** Called once no request is pending any more, while the invocation's end waits for that (`requestsDone`). */
let onIdle: (() => void) | undefined;

/** Called by the host (through the dispatch entry) when a request settles. */
export function settleHttp(id: number, payload: { response?: RawResponse; error?: { code: string; message: string } }): void {
  // Primordials: this may run after the component's code, while the invocation waits for its requests.
  const waiter = MapPrototypeGet(pending, id);
  if (!waiter) return;
  MapPrototypeDelete(pending, id);
  if (payload.response) waiter.resolve(payload.response);
  else waiter.reject(new HttpBridgeError(payload.error?.message ?? "request failed", payload.error?.code ?? "NETWORK"));
  if (MapPrototypeSize(pending) === 0) onIdle?.();
}

/** A promise the platform's code may await after the component's ran (its own `constructor`, the original). */
function safely<T>(executor: (resolve: (value: T) => void) => void): Promise<T> {
  const promise = new PromiseCtor<T>(executor);
  pinConstructor(promise, PromiseCtor);
  return promise;
}

/** Resolves true once no request is pending, or false after `ms`. */
export function requestsDone(ms: number): Promise<boolean> {
  return safely<boolean>((resolve) => {
    if (MapPrototypeSize(pending) === 0) return resolve(true);
    const timer = platformTimer(() => {
      onIdle = undefined;
      resolve(false);
    }, ms);
    onIdle = () => {
      onIdle = undefined;
      clearPlatformTimer(timer);
      resolve(true);
    };
  });
}

/** Resolves on the next timer turn: every promise chain that can run before it has run. */
export function nextTurn(): Promise<void> {
  return safely<void>((resolve) => void platformTimer(resolve, 0));
}

/** Rejects requests still open when an invocation ends. */
export function abandonHttp(): void {
  onIdle = undefined;
  // Primordials only: this runs when the invocation ends, after the component's code.
  const waiting: { reject: (e: Error) => void }[] = [];
  MapPrototypeForEach(pending, (waiter) => append(waiting, waiter));
  MapPrototypeClear(pending);
  for (let i = 0; i < waiting.length; i++)
    waiting[i].reject(new HttpBridgeError("the invocation ended before the request completed", "ABORTED"));
}

/** Requests made and not yet answered. */
export function pendingRequests(): number {
  return MapPrototypeSize(pending);
}
