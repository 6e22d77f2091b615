// The one place errors become HTTP: every code's status is in STATUS, and whatever a handler
// throws becomes the body {"error", "code", "details"?}. Unknown failures are a 500 that leaks nothing.
import type { Context, Next } from "koa";
import { DomainError } from "../../commands/decider.js";
import type { ErrorCode } from "../../commands/errors.js";
import { toDomainError } from "../errors.js";
import { requestLog } from "./requestLog.js";
import type { Logger } from "../observability/log.js";

export const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  malformed_json: 400,
  json_too_deep: 400,
  malformed_body: 400,
  invalid_component: 400,
  invalid_api_key: 400,
  invalid_name: 400,
  hook_failed: 400,
  component_url_unreachable: 400,
  usage: 400,
  invalid_config: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_implemented: 501,
  name_taken: 409,
  already_exists: 409,
  account_in_use: 409,
  data_dir_locked: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  quota_exceeded: 429,
  backlog_full: 429,
  overloaded: 503,
  run_failed: 500,
  run_timeout: 504,
  unavailable: 503,
  internal: 500,
};

export interface ErrorBody {
  readonly error: string;
  readonly code: ErrorCode;
  readonly details?: readonly { path: string; message: string }[];
}

const methodNotAllowed = (ctx: Context) =>
  new DomainError("method_not_allowed", `${ctx.method} is not allowed on ${ctx.path} (allowed: ${ctx.response.get("Allow") || "none"})`);
const notImplemented = (ctx: Context) => new DomainError("not_implemented", `the method ${ctx.method} is not implemented`);

/** What a thrown error answers: its status, its body and the headers it adds. */
export interface ErrorAnswer {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Maps whatever a handler threw onto the answer clients see; a server-side failure (not a run's,
 * not an unimplemented method) is logged with `log`.
 */
export function errorAnswer(thrown: unknown, method: string, path: string, log: () => Logger): ErrorAnswer {
  const error = toDomainError(thrown);
  const status = STATUS[error.code];
  const headers: Record<string, string> = {};
  if (error.code === "unauthorized") headers["WWW-Authenticate"] = 'Bearer realm="headwater"';
  if (error.retryAfterSeconds !== undefined) headers["Retry-After"] = String(error.retryAfterSeconds);
  if (status >= 500 && error.code !== "run_failed" && error.code !== "run_timeout" && error.code !== "not_implemented") {
    log().error({ err: thrown }, `${method} ${path} failed`);
  }
  return { status, body: { error: error.message, code: error.code, ...(error.details ? { details: error.details } : {}) }, headers };
}

/** Maps whatever a handler throws onto the status and error body clients see. */
export async function errorBodies(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw new DomainError("not_found", `no route for ${ctx.method} ${ctx.path}`);
    // The router's answers for a known path with another method (405, its Allow header set) and for
    // a method the API has no route for at all (501): client errors with the usual body.
    if (ctx.status === 405 && ctx.body === undefined) throw methodNotAllowed(ctx);
    if (ctx.status === 501 && ctx.body === undefined) throw notImplemented(ctx);
  } catch (thrown) {
    const answer = errorAnswer(thrown, ctx.method, ctx.path, () => requestLog(ctx));
    ctx.status = answer.status;
    ctx.body = answer.body;
    ctx.set(answer.headers);
  }
}
