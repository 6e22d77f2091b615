// Every request gets an id (the caller's X-Request-Id when it is a sane token, else a new one),
// echoed in the response and carried by a child logger; one access-log line is written when the
// response is finished (streams included), and the same facts feed the request metrics.
import { randomUUID } from "node:crypto";
import type { Context, Next } from "koa";
import { log, type Logger } from "../observability/log.js";
import { ENDPOINT_PATH } from "./endpoints.js";

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

export function requestIds(base: Logger = log) {
  return async function requestId(ctx: Context, next: Next): Promise<void> {
    const given = ctx.get("x-request-id");
    const id = REQUEST_ID.test(given) ? given : randomUUID();
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
  if (ENDPOINT_PATH.test(ctx.path)) return "/e/{id}";
  return "unmatched";
}

export function accessLog(onFinished?: (request: FinishedRequest) => void) {
  return async function access(ctx: Context, next: Next): Promise<void> {
    const started = process.hrtime.bigint();
    // 'close' also fires for streamed responses (SSE) and for clients that went away.
    ctx.res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeLabel(ctx);
      const status = ctx.res.headersSent ? ctx.res.statusCode : 499;
      const level = QUIET_PATHS.has(ctx.path) ? "debug" : "info";
      if (((ctx.state.logBase as Logger | undefined) ?? log).isLevelEnabled(level)) {
        const fields = {
          method: ctx.method,
          path: ctx.path, // never the query string: stream tokens travel there
          route,
          status,
          ms: Math.round(seconds * 1e6) / 1e3,
          bytes: Number(ctx.res.getHeader("content-length") ?? 0) || undefined,
          ip: ctx.ip,
        };
        requestLog(ctx)[level](fields, "request");
      }
      onFinished?.({ method: ctx.method, route, status, seconds });
    });
    await next();
  };
}
