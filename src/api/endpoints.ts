import type { Context, Next } from "koa";
import cors from "@koa/cors";
import getRawBody from "raw-body";
import busboy from "busboy";
import querystring from "node:querystring";
import { DomainError } from "../../commands/decider.js";
import { RateLimiter } from "./rateLimit.js";
import type { ApiDeps } from "./deps.js";
import type { HttpEvent, HttpResponse } from "../runtime/types.js";
import { newId } from "../ids.js";
import type { Workflow } from "../readModels/workflows.js";
import { JsonLimitError, MAX_INPUT_DEPTH, parseJson } from "../json/bounded.js";
import { withAdditionalProps } from "../components/additionalProps.js";

/** Source endpoints live at /e/<endpoint id>[/any/sub/path], outside the authenticated API. */
export const ENDPOINT_PATH = /^\/e\/([0-9a-z]{24})(\/.*)?$/;

/** Parts of a multipart body; a truncated or malformed body rejects (every stream has an error handler). */
async function readMultipart(raw: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const fields: Record<string, unknown> = {};
  await new Promise<void>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { "content-type": contentType }, limits: { fields: 1000, files: 100, parts: 1100 } });
    } catch (error) {
      reject(error); // no boundary, unknown type
      return;
    }
    parser.on("field", (name, value) => {
      fields[name] = name in fields ? [fields[name], value].flat() : value;
    });
    parser.on("file", (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("error", reject);
      stream.on("end", () => {
        const content = Buffer.concat(chunks);
        fields[name] = {
          filename: info.filename,
          mimeType: info.mimeType,
          size: content.length,
          content_base64: content.toString("base64"),
        };
      });
    });
    parser.on("close", () => resolve());
    parser.on("error", reject);
    parser.end(raw);
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
    else if (ctx.is("application/json", "application/*+json")) body = parseJson(text, { maxDepth: MAX_INPUT_DEPTH });
    else if (ctx.is("application/x-www-form-urlencoded")) body = { ...querystring.parse(text) };
    else if (ctx.is("multipart/form-data")) body = await readMultipart(raw, type);
  } catch (error) {
    // Nesting past the bound could not be stored or delivered: refused. Anything merely unparsable reaches the run as text.
    if (error instanceof JsonLimitError && error.reason === "too_deep") {
      throw new DomainError("json_too_deep", `the request body: ${error.message}`);
    }
    body = text;
  }
  return {
    method: ctx.method,
    path: subPath,
    // Most webhook calls carry no query string: nothing to parse then.
    query: ctx.querystring === "" ? {} : { ...(ctx.query as Record<string, string | string[]>) },
    // Node gives the names lowercased and no value undefined: a plain copy is the event's own object.
    headers: { ...ctx.req.headers } as Record<string, string | string[]>,
    bodyRaw: text,
    body: body === undefined ? {} : body,
  };
}

/**
 * Headers a component may not set: framing and hop-by-hop ones (the node computes them), cookies
 * and origin-wide security policy (endpoints may share the API's origin), CORS (the node answers it).
 */
const DROPPED_RESPONSE_HEADERS =
  /^(?:connection|keep-alive|transfer-encoding|upgrade|te|trailer|content-length|host|proxy-.*|set-cookie2?|strict-transport-security|clear-site-data|public-key-pins(?:-report-only)?|alt-svc|access-control-.*)$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[^\r\n\0]*$/;

/** A component's custom response, under the documented header policy; throws if it cannot be sent as is. */
function sendResponse(ctx: Context, response: HttpResponse): void {
  if (!Number.isInteger(response.status) || response.status < 200 || response.status > 599) {
    throw new DomainError("run_failed", `the source responded with an invalid status ${String(response.status)}`);
  }
  const headers: [string, string | string[]][] = [];
  for (const [name, value] of Object.entries(response.headers ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    if (!HEADER_NAME.test(name) || !values.every((v) => typeof v === "string" && HEADER_VALUE.test(v))) {
      throw new DomainError("run_failed", `the source responded with an invalid header ${JSON.stringify(name).slice(0, 100)}`);
    }
    if (!DROPPED_RESPONSE_HEADERS.test(name.toLowerCase())) headers.push([name, value]);
  }
  ctx.status = response.status;
  for (const [name, value] of headers) ctx.set(name, value);
  // Whatever the page is, it runs as an opaque origin: no script of a component acts as the API's origin.
  ctx.append("Content-Security-Policy", "sandbox");
  ctx.set("X-Content-Type-Options", "nosniff");
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
export function sourceEndpoints(
  deps: Pick<
    ApiDeps,
    "sources" | "components" | "admission" | "invocations" | "workflowsView" | "workflowRuns" | "projector" | "clock" | "settings"
  >,
) {
  const options = {
    maxBodyBytes: deps.settings.endpointMaxBodyBytes,
    ratePerSecond: deps.settings.endpointRatePerSecond,
    burst: deps.settings.endpointBurst,
  };
  const perSource = new RateLimiter({ ratePerSecond: options.ratePerSecond, burst: options.burst });
  const allowCors = cors({ origin: "*", allowMethods: "GET,HEAD,PUT,POST,DELETE,PATCH,OPTIONS", maxAge: 600 });

  async function readBody(ctx: Context): Promise<Buffer> {
    try {
      return await getRawBody(ctx.req, { limit: options.maxBodyBytes, length: ctx.request.length });
    } catch (error) {
      if ((error as { status?: number }).status === 413) {
        throw new DomainError("payload_too_large", `request body is over ${options.maxBodyBytes} bytes`);
      }
      throw new DomainError("malformed_body", "the request body could not be read");
    }
  }

  /** A workflow's HTTP trigger: the same request handling; the run goes to the workflow runners. */
  async function workflowEndpoint(workflow: Workflow, subPath: string, ctx: Context): Promise<void> {
    perSource.take(workflow.id, "to this endpoint");
    const raw = await readBody(ctx);
    const message = {
      invocationId: newId("inv"),
      workflowId: workflow.id,
      trigger: "http" as const,
      event: await httpEvent(ctx, raw, subPath),
      minPosition: deps.projector.position,
      enqueuedMs: deps.clock.now(),
      uniqueToRecord: true,
    };
    deps.admission.admit({
      invocationId: message.invocationId,
      sourceId: workflow.id,
      ownerId: workflow.creatorId,
      bytes: Buffer.byteLength(message.event.bodyRaw) + 1024,
    });
    if (workflow.trigger.type !== "http" || workflow.trigger.respond !== "workflow") {
      await deps.admission.during(message.invocationId, deps.workflowRuns.submit(message));
      ctx.status = 200;
      ctx.body = { success: true, invocation_id: message.invocationId };
      return;
    }
    const reply = await deps.admission.during(message.invocationId, deps.workflowRuns.submitAndWait(message, deps.settings.runWaitMs));
    if (reply.position !== undefined) await deps.projector.waitFor(reply.position);
    if (reply.response) return sendResponse(ctx, reply.response);
    if (reply.status === "duplicate") throw responseLost();
    if (reply.status !== "done") throw new DomainError("not_found", "no active workflow at this endpoint");
    if (!reply.ok) {
      throw new DomainError("run_failed", `the workflow failed before it responded: ${reply.error?.message ?? "unknown error"}`);
    }
    ctx.status = 204; // the workflow ended without $.respond()
  }

  /**
   * The run was recorded by a node that stopped before it answered: the response it gave was
   * never stored, so it cannot be replayed. Sending the request again runs it again.
   */
  const responseLost = () =>
    new DomainError(
      "unavailable",
      "the run was recorded by a node that stopped before it answered, and its response was lost; send the request again",
      undefined,
      1,
    );

  return async function sourceEndpoint(ctx: Context, next: Next): Promise<void> {
    const match = ENDPOINT_PATH.exec(ctx.path);
    if (!match) {
      await next();
      return;
    }
    await allowCors(ctx, async () => {
      const source = deps.sources.byEndpoint(match[1]);
      if (!source) {
        const workflow = deps.workflowsView.byEndpoint(match[1]);
        if (workflow?.active && workflow.trigger.type === "http") return workflowEndpoint(workflow, match[2] ?? "/", ctx);
      }
      if (!source || !source.active) throw new DomainError("not_found", "no active source at this endpoint");

      perSource.take(source.id, "to this endpoint");

      const raw = await readBody(ctx);
      const component = deps.components.get(source.componentId);
      const customResponse =
        component !== undefined &&
        withAdditionalProps(component.meta.component.props, source.additionalProps).some(
          (p) => p.type === "$.interface.http" && p.customResponse === true,
        );
      const message = {
        invocationId: newId("inv"),
        sourceId: source.id,
        trigger: "http" as const,
        event: await httpEvent(ctx, raw, match[2] ?? "/"),
        minPosition: deps.projector.position,
        enqueuedMs: deps.clock.now(),
        uniqueToRecord: true,
      };
      deps.admission.admit({
        invocationId: message.invocationId,
        sourceId: source.id,
        ownerId: source.creatorId,
        bytes: Buffer.byteLength(message.event.bodyRaw) + 1024,
      });
      if (!customResponse) {
        await deps.admission.during(message.invocationId, deps.invocations.submit(message));
        ctx.status = 200;
        ctx.body = { success: true, invocation_id: message.invocationId };
        return;
      }
      const reply = await deps.admission.during(message.invocationId, deps.invocations.submitAndWait(message, deps.settings.runWaitMs));
      // Read-your-writes: once answered, the events the run caused are listable on this node.
      if (reply.position !== undefined) await deps.projector.waitFor(reply.position);
      if (reply.response) return sendResponse(ctx, reply.response);
      if (reply.status === "duplicate") throw responseLost();
      if (reply.status !== "done") throw new DomainError("not_found", "no active source at this endpoint");
      if (!reply.ok) {
        throw new DomainError("run_failed", `the source's run failed before it responded: ${reply.error?.message ?? "unknown error"}`);
      }
      ctx.status = 204; // the run ended without calling respond()
    });
  };
}
