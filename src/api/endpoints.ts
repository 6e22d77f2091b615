import type { Context, Next } from "koa";
import cors from "@koa/cors";
import getRawBody from "raw-body";
import busboy from "busboy";
import querystring from "node:querystring";
import { Readable } from "node:stream";
import { TokenBucket } from "limiter";
import { LRUCache } from "lru-cache";
import { ApiError } from "./errors.js";
import type { Services } from "./services.js";
import type { HttpEvent, HttpResponse } from "../runtime/types.js";
import { newId } from "../ids.js";

/** Source endpoints live at /e/<endpoint id>[/any/sub/path], outside the authenticated API. */
export const ENDPOINT_PATH = /^\/e\/([0-9a-z]{24})(\/.*)?$/;

export interface EndpointOptions {
  readonly maxBodyBytes: number;
  readonly ratePerSecond: number;
  readonly burst: number;
}

async function readMultipart(raw: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const fields: Record<string, unknown> = {};
  await new Promise<void>((resolve, reject) => {
    const parser = busboy({ headers: { "content-type": contentType } });
    parser.on("field", (name, value) => {
      fields[name] = name in fields ? [fields[name], value].flat() : value;
    });
    parser.on("file", (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const content = Buffer.concat(chunks);
        fields[name] = { filename: info.filename, mimeType: info.mimeType, size: content.length, content_base64: content.toString("base64") };
      });
    });
    parser.on("close", () => resolve());
    parser.on("error", reject);
    Readable.from(raw).pipe(parser);
  });
  return fields;
}

/** The HTTP event run() receives: JSON, form and multipart bodies parsed, anything else as text. */
async function httpEvent(ctx: Context, raw: Buffer, subPath: string): Promise<HttpEvent> {
  const text = raw.toString("utf8");
  let body: unknown = text;
  const type = ctx.get("content-type");
  try {
    if (raw.length === 0) body = undefined;
    else if (ctx.is("application/json", "application/*+json")) body = JSON.parse(text);
    else if (ctx.is("application/x-www-form-urlencoded")) body = { ...querystring.parse(text) };
    else if (ctx.is("multipart/form-data")) body = await readMultipart(raw, type);
  } catch {
    body = text; // unparsable: the run still gets the raw text
  }
  return {
    method: ctx.method,
    path: subPath,
    query: { ...(ctx.query as Record<string, string | string[]>) },
    headers: Object.fromEntries(Object.entries(ctx.request.headers).map(([k, v]) => [k.toLowerCase(), v ?? ""])),
    bodyRaw: text,
    body: body === undefined ? {} : body,
  };
}

function sendResponse(ctx: Context, response: HttpResponse): void {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers ?? {})) ctx.set(name, value as string | string[]);
  const body = response.body;
  if (body === null || body === undefined) ctx.body = "";
  else if (typeof body === "string") ctx.body = body;
  else ctx.body = Buffer.from(body.base64, "base64");
}

/**
 * The HTTP interface: any method and sub-path reach the source's run. Without customResponse the
 * answer comes once the invocation is durably queued; with it, once the run has ended and its
 * events are stored, carrying what the run passed to respond().
 */
export function sourceEndpoints(services: Services, options: EndpointOptions) {
  const buckets = new LRUCache<string, TokenBucket>({ max: 50_000 });
  const allowCors = cors({ origin: "*", allowMethods: "GET,HEAD,PUT,POST,DELETE,PATCH,OPTIONS", maxAge: 600 });

  return async function sourceEndpoint(ctx: Context, next: Next): Promise<void> {
    const match = ENDPOINT_PATH.exec(ctx.path);
    if (!match) return next();
    return allowCors(ctx, async () => {
      const row = services.sources.sourceByEndpoint(match[1]!);
      if (!row || row.active !== 1) throw new ApiError(404, "not_found", "no active source at this endpoint");

      let bucket = buckets.get(row.id);
      if (!bucket) {
        bucket = new TokenBucket({ bucketSize: options.burst, tokensPerInterval: options.ratePerSecond, interval: "second" });
        bucket.content = options.burst; // a new endpoint starts with its whole burst available
        buckets.set(row.id, bucket);
      }
      if (!bucket.tryRemoveTokens(1)) {
        const wait = Math.max(1, Math.ceil(1 / options.ratePerSecond));
        throw new ApiError(429, "rate_limited", "too many requests to this endpoint", undefined, { "Retry-After": String(wait) });
      }
      services.quota.check(row.creator_id);

      let raw: Buffer;
      try {
        raw = await getRawBody(ctx.req, { limit: options.maxBodyBytes, length: ctx.request.length });
      } catch (error) {
        if ((error as { status?: number }).status === 413) {
          throw new ApiError(413, "payload_too_large", `request body is over ${options.maxBodyBytes} bytes`);
        }
        throw new ApiError(400, "malformed_body", "the request body could not be read");
      }
      const component = services.components.get(row.component_id);
      const customResponse = component?.meta.component.props.some((p) => p.type === "$.interface.http" && p.customResponse === true);
      const message = {
        invocationId: newId("inv"),
        sourceId: row.id,
        trigger: "http" as const,
        event: await httpEvent(ctx, raw, match[2] ?? "/"),
        minPosition: services.projector.position,
        enqueuedMs: services.clock.now(),
      };
      if (!customResponse) {
        await services.invocations.submit(message);
        ctx.status = 200;
        ctx.body = { success: true, invocation_id: message.invocationId };
        return;
      }
      const reply = await services.invocations.submitAndWait(message, services.runWaitMs);
      // Read-your-writes: once answered, the events the run caused are listable on this node.
      if (reply.position !== undefined) await services.projector.waitFor(reply.position);
      if (reply.response) return sendResponse(ctx, reply.response);
      if (reply.status !== "done") throw new ApiError(404, "not_found", "no active source at this endpoint");
      if (!reply.ok) {
        throw new ApiError(500, "run_failed", `the source's run failed before it responded: ${reply.error?.message ?? "unknown error"}`);
      }
      ctx.status = 204; // the run ended without calling respond()
    });
  };
}
