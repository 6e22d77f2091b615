// Code in this folder runs INSIDE the isolate (bundled by esbuild into the prelude), never in Node.
// The host injects these callbacks as globals; the prelude captures them in closures and deletes
// the globals, so user code never holds a host function. Everything passed is a primitive or
// JSON text: the runner child re-checks it, the isolate's checks only make errors clear.

export type SyncResult = { ok: true; value: unknown } | { ok: false; error: string; name?: string; code?: string };

export interface HostBridge {
  /** Fire-and-forget (ignored callbacks keep their order ahead of the invocation result). */
  log(level: string, message: string): void;
  /** One event as JSON text and its meta fields (undefined when absent). */
  emit(eventJson: string, id: unknown, name: unknown, summary: unknown, ts: unknown): void;
  /** One $.send.* destination, normalized, as JSON text (fire-and-forget, like emit). */
  send(sendJson: string): void;
  /** Headers as JSON text; the body as text, bytes or absent ("empty", "text", "json", "bytes"). */
  respond(status: number, headersJson: string, bodyKind: string, body: string | Uint8Array | null): void;
  http(id: number, request: unknown): void;
  timer(op: "set" | "clear", id: number, ms: number): void;
  /** Synchronous: store (JSON text) or delete (undefined) a this.db key; null when accepted. */
  db(key: string, json: string | undefined): { name: string; message: string } | null;
  /** Synchronous host operations: hashes, HMAC, random bytes, asymmetric keys and signatures, URL parsing. */
  sync(op: string, args: unknown): SyncResult;
  /** Fire-and-forget like log: reaches the host after every callback made before it. */
  flushed(): void;
  /** One entry of /tmp handed on to a workflow's next step (fire-and-forget, like emit): a file's bytes, a directory's none. */
  tmp(path: string, kind: string, data: Uint8Array, mtimeMs: number, birthtimeMs: number): void;
}

export const BRIDGE_GLOBALS = {
  log: "__hw_bridge_log",
  emit: "__hw_bridge_emit",
  respond: "__hw_bridge_respond",
  send: "__hw_bridge_send",
  http: "__hw_bridge_http",
  timer: "__hw_bridge_timer",
  db: "__hw_bridge_db",
  sync: "__hw_bridge_sync",
  flushed: "__hw_bridge_flushed",
  tmp: "__hw_bridge_tmp",
} as const;

export function takeBridge(): HostBridge {
  const g = globalThis as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, globalName] of Object.entries(BRIDGE_GLOBALS)) {
    const fn = g[globalName];
    if (typeof fn !== "function") throw new Error(`bridge ${globalName} missing`);
    out[key] = fn;
    delete g[globalName];
  }
  return Object.freeze(out) as unknown as HostBridge;
}

let bridge: HostBridge | undefined;

export function setBridge(b: HostBridge): void {
  bridge = b;
}

export function host(): HostBridge {
  if (!bridge) throw new Error("sandbox bridge not initialised");
  return bridge;
}

export function hostSync<T>(op: string, args: unknown): T {
  const result = host().sync(op, args);
  if (!result.ok) {
    const err =
      result.name === "TypeError"
        ? new TypeError(result.error)
        : result.name === "RangeError"
          ? new RangeError(result.error)
          : new Error(result.error);
    // Node's error code (ERR_OSSL_..., ERR_INVALID_ARG_TYPE) when the host's error had one.
    if (typeof result.code === "string") Object.assign(err, { code: result.code });
    throw err;
  }
  return result.value as T;
}
