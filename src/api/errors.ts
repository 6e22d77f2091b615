import type { Context, Next } from "koa";
import { CommandRejected } from "../../commands/decider.js";
import { ComponentValidationError } from "../runtime/errors.js";
import { OutboundError } from "../net/outbound.js";
import { ReplyTimeoutError } from "../bus/reply.js";

export interface ErrorDetail {
  readonly path: string;
  readonly message: string;
}

/** Every failure the API answers: the one shape clients see, {"error", "code", "details"?}. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: readonly ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new ApiError(404, "not_found", `${what} not found`);
export const invalid = (message: string, details?: ErrorDetail[]) => new ApiError(400, "invalid_request", message, details);

/** Maps whatever a handler throws onto the error body; unknown failures become a 500 that leaks nothing. */
export async function errorBodies(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw new ApiError(404, "not_found", `no route for ${ctx.method} ${ctx.path}`);
  } catch (error) {
    const apiError = toApiError(error);
    ctx.status = apiError.status;
    ctx.body = {
      error: apiError.message,
      code: apiError.code,
      ...(apiError.details ? { details: apiError.details } : {}),
    };
    for (const [name, value] of Object.entries(apiError.headers ?? {})) ctx.set(name, value);
    if (apiError.status >= 500) console.error(`${ctx.method} ${ctx.path} failed:`, error);
  }
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof CommandRejected) return new ApiError(error.status, error.code, error.message);
  if (error instanceof ComponentValidationError) {
    const details = error.problems.map((p) => ({ path: `component.${p.path}`, message: p.message }));
    return new ApiError(400, "invalid_component", `the component has ${details.length} problem(s): ${details[0]?.path} ${details[0]?.message}`, details);
  }
  if (error instanceof OutboundError) {
    return new ApiError(400, "component_url_unreachable", `component_url could not be fetched: ${error.message}`);
  }
  if (error instanceof ReplyTimeoutError) {
    return new ApiError(504, "run_timeout", `the run did not answer within ${Math.round(error.timeoutMs / 1000)} s`);
  }
  const status = (error as { status?: unknown; expose?: unknown }).status;
  // koa/http-errors from the router (405) and raw-body (413, 400) carry a safe status and message.
  if (typeof status === "number" && status >= 400 && status < 500) {
    const code = status === 405 ? "method_not_allowed" : status === 413 ? "payload_too_large" : "bad_request";
    return new ApiError(status, code, (error as Error).message);
  }
  return new ApiError(500, "internal", "internal error");
}
