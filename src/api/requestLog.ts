// Every request gets an id (the caller's X-Request-Id when it is a sane token, else a new one),
// echoed in the response and carried by a child logger; one access-log line is written when the
// response is finished (streams included), and the same facts feed the request metrics.
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { Context, Next } from "koa";
import { log, type Logger } from "../observability/log.js";

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;
/** Probes and scrapes are logged at debug: every few seconds each, they would drown the rest. */
const QUIET_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

export interface FinishedRequest {
  readonly method: string;
  /** The route's template (`/v1/sources/{id}`), never the raw path: bounded label values. */
  readonly route: string;
  readonly status: number;
  readonly seconds: number;
}

/**
 * The logger of this request (with its id), or the server's outside a request. The child logger is
 * made on first use: most requests log nothing at the default levels, and making one costs more
 * than the rest of a queued request's bookkeeping.
 */
export function requestLog(ctx: Context): Logger {
  const state = ctx.state as { log?: Logger; logBase?: Logger; requestId?: string };
  if (state.log === undefined && state.logBase !== undefined) state.log = state.logBase.child({ reqId: state.requestId });
  return state.log ?? log;
}

/** The caller's X-Request-Id when it is a sane token, else a new one. */
export function requestIdFor(given: string | string[] | undefined): string {
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

export function requestIds(base: Logger = log) {
  return async function requestId(ctx: Context, next: Next): Promise<void> {
    const id = requestIdFor(ctx.get("x-request-id"));
    ctx.state.requestId = id;
    ctx.state.logBase = base;
    ctx.set("X-Request-Id", id);
    // No answer is ever sniffed into a page: JSON echoing event data stays JSON in a browser.
    ctx.set("X-Content-Type-Options", "nosniff");
    await next();
  };
}

/** The route a request matched, as a template; `unmatched` for anything else (404s, scans). */
export function routeLabel(ctx: Context): string {
  const matched = (ctx as Context & { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === "string") return matched.replace(/:(\w+)/g, "{$1}");
  if (typeof ctx.state.route === "string") return ctx.state.route;
  return "unmatched";
}

/** What the access line says of a finished request. */
export interface AccessFields extends FinishedRequest {
  readonly path: string;
  readonly bytes: number | undefined;
  readonly ip: string;
}

/** Calls `finished` once the response is done with (answered, streamed to its end, or the client gone). */
export function whenFinished(res: ServerResponse, started: bigint, finished: (status: number, seconds: number) => void): void {
  // 'close' also fires for streamed responses (SSE) and for clients that went away.
  res.once("close", () => finished(res.headersSent ? res.statusCode : 499, Number(process.hrtime.bigint() - started) / 1e9));
}

/** The access line of a finished request (at info; probes and scrapes at debug), and the same facts to `onFinished`. */
export function logAccess(
  base: Logger,
  requestLogger: () => Logger,
  fields: AccessFields,
  onFinished?: (request: FinishedRequest) => void,
): void {
  const level = QUIET_PATHS.has(fields.path) ? "debug" : "info";
  if (base.isLevelEnabled(level)) {
    requestLogger()[level](
      {
        method: fields.method,
        path: fields.path, // never the query string: stream tokens travel there
        route: fields.route,
        status: fields.status,
        ms: Math.round(fields.seconds * 1e6) / 1e3,
        bytes: fields.bytes,
        ip: fields.ip,
      },
      "request",
    );
  }
  onFinished?.({ method: fields.method, route: fields.route, status: fields.status, seconds: fields.seconds });
}

/** The size of an answer for its access line: its Content-Length, if any. */
export const answeredBytes = (res: ServerResponse): number | undefined => Number(res.getHeader("content-length") ?? 0) || undefined;

export function accessLog(onFinished?: (request: FinishedRequest) => void) {
  return async function access(ctx: Context, next: Next): Promise<void> {
    whenFinished(ctx.res, process.hrtime.bigint(), (status, seconds) =>
      logAccess(
        (ctx.state.logBase as Logger | undefined) ?? log,
        () => requestLog(ctx),
        { method: ctx.method, path: ctx.path, route: routeLabel(ctx), status, seconds, bytes: answeredBytes(ctx.res), ip: ctx.ip },
        onFinished,
      ),
    );
    await next();
  };
}
