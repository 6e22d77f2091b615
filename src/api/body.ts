import type { Context, Next } from "koa";
import getRawBody from "raw-body";
import { DomainError } from "../../commands/decider.js";
import { JsonLimitError, MAX_INPUT_DEPTH, parseJson } from "../json/bounded.js";

/**
 * Reads JSON request bodies for the API: wrong content type 415, over the limit 413, unparsable
 * 400. An empty body is no body, since several endpoints take their parameters in the query string.
 */
export function jsonBody(limitBytes: number) {
  return async function parseJsonBody(ctx: Context, next: Next): Promise<void> {
    if (ctx.method === "GET" || ctx.method === "HEAD" || ctx.method === "DELETE" || ctx.method === "OPTIONS") {
      await next();
      return;
    }
    const length = ctx.request.length;
    if (length !== undefined && length > limitBytes) {
      throw new DomainError("payload_too_large", `request body is over ${limitBytes} bytes`);
    }
    const hasBody = (length ?? 0) > 0 || ctx.get("transfer-encoding") !== "";
    if (!hasBody) {
      await next();
      return;
    }
    if (!ctx.is("application/json")) {
      throw new DomainError("unsupported_media_type", "request bodies must be JSON with Content-Type: application/json");
    }
    let text: string;
    try {
      text = await getRawBody(ctx.req, { limit: limitBytes, length, encoding: "utf8" });
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 413) throw new DomainError("payload_too_large", `request body is over ${limitBytes} bytes`);
      throw new DomainError("malformed_body", "the request body could not be read");
    }
    if (text.trim() !== "") ctx.request.body = parseBody(text);
    await next();
  };
}

/** Half of a UTF-16 surrogate pair: a `\ud800` escape is valid JSON syntax but no character. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Where a string (key or value) of a parsed body holds a lone surrogate; depth is bounded by the parser. */
function loneSurrogateAt(value: unknown, path: string): string | undefined {
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? path : undefined;
  if (value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogateAt(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    if (LONE_SURROGATE.test(key)) return `${path}.${key}`;
    const found = loneSurrogateAt(item, `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}

/**
 * A JSON request body: malformed or too deeply nested text is the client's error (400), never a 500.
 * So is a lone surrogate (`"\ud800"`): it cannot be stored as UTF-8, and was silently replaced
 * by U+FFFD in the read models while the log kept the escape.
 */
export function parseBody(text: string): unknown {
  const parsed = parseJsonBody(text);
  const at = loneSurrogateAt(parsed, "body");
  if (at !== undefined) {
    throw new DomainError("malformed_json", `the request body is not valid Unicode: ${at} holds a lone surrogate (half a character)`, [
      { path: at, message: "holds a lone surrogate" },
    ]);
  }
  return parsed;
}

function parseJsonBody(text: string): unknown {
  try {
    return parseJson(text, { maxDepth: MAX_INPUT_DEPTH });
  } catch (error) {
    if (error instanceof JsonLimitError && error.reason === "too_deep") {
      throw new DomainError("json_too_deep", `the request body is ${error.message}`);
    }
    throw new DomainError(
      "malformed_json",
      `the request body is not valid JSON: ${(error as Error).message.replace(/^not valid JSON: /, "")}`,
    );
  }
}

declare module "koa" {
  interface Request {
    body?: unknown;
  }
}
