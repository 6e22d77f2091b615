import type http from "node:http";
import { parse as parseForm } from "node:querystring";
import getRawBody from "raw-body";
import busboy from "busboy";
import { DomainError } from "../../commands/decider.js";
import { RateLimiter } from "./rateLimit.js";
import type { ApiDeps } from "./deps.js";
import type { HttpEvent, HttpResponse } from "../runtime/types.js";
import { newId } from "../ids.js";
import type { Workflow } from "../readModels/workflows.js";
import { JsonLimitError, MAX_INPUT_DEPTH, parseJson } from "../json/bounded.js";
import { httpInterface } from "../components/additionalProps.js";
import { errorAnswer } from "./errors.js";
import { answeredBytes, logAccess, requestIdFor, whenFinished, type FinishedRequest } from "./requestLog.js";
import { log, type Logger } from "../observability/log.js";
import type { HookWindow } from "../sources/lifecycle.js";

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

/** A request's target: the path and the query string (origin-form, or absolute-form as a proxy sends it). */
export function requestTarget(url: string): { readonly path: string; readonly querystring: string } {
  let target = url;
  if (!target.startsWith("/")) {
    try {
      const parsed = new URL(target);
      target = parsed.pathname + parsed.search;
    } catch {
      return { path: target, querystring: "" };
    }
  }
  const hash = target.indexOf("#");
  if (hash >= 0) target = target.slice(0, hash);
  const mark = target.indexOf("?");
  return mark < 0 ? { path: target, querystring: "" } : { path: target.slice(0, mark), querystring: target.slice(mark + 1) };
}

/** A query string as an object: a name given once is a string, given more often an array of its values. */
function parseQuery(querystring: string): Record<string, string | string[]> {
  const params = new URLSearchParams(querystring);
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    // Defined, not assigned: a parameter named __proto__ is a parameter like any other.
    Object.defineProperty(query, name, {
      value: values.length === 1 ? values[0] : values,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return query;
}

/** The media type of a Content-Type header, lowercased, without its parameters. */
const mediaType = (header: string | undefined): string => (header ?? "").split(";", 1)[0].trim().toLowerCase();
const JSON_MEDIA_TYPE = /^application\/(?:json|[^/\s]*\+json)$/;

/** The HTTP event run() receives: JSON, form and multipart bodies parsed, anything else as text. */
async function httpEvent(req: http.IncomingMessage, querystring: string, raw: Buffer, subPath: string): Promise<HttpEvent> {
  const text = raw.toString("utf8");
  let body: unknown = text;
  const type = mediaType(req.headers["content-type"]);
  try {
    if (raw.length === 0) body = undefined;
    else if (JSON_MEDIA_TYPE.test(type)) body = parseJson(text, { maxDepth: MAX_INPUT_DEPTH });
    else if (type === "application/x-www-form-urlencoded") body = { ...parseForm(text) };
    else if (type === "multipart/form-data") body = await readMultipart(raw, req.headers["content-type"] ?? "");
  } catch (error) {
    // Nesting past the bound could not be stored or delivered: refused. Anything merely unparsable reaches the run as text.
    if (error instanceof JsonLimitError && error.reason === "too_deep") {
      throw new DomainError("json_too_deep", `the request body: ${error.message}`);
    }
    body = text;
  }
  return {
    method: req.method ?? "GET",
    path: subPath,
    // Most webhook calls carry no query string: nothing to parse then.
    query: querystring === "" ? {} : parseQuery(querystring),
    // Node gives the names lowercased and no value undefined: a plain copy is the event's own object.
    headers: { ...req.headers } as Record<string, string | string[]>,
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

/** Statuses whose answers carry no body (Content-Type and Content-Length are dropped with it). */
const EMPTY_STATUSES = new Set([204, 205, 304]);

/** An answer with no body. */
function sendEmpty(res: http.ServerResponse, status: number): void {
  res.statusCode = status;
  for (const name of ["Content-Type", "Content-Length", "Transfer-Encoding"]) res.removeHeader(name);
  res.end();
}

/** A JSON answer (Node leaves the body out of an answer to HEAD, Content-Length kept). */
function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}

/** A component's custom response, under the documented header policy; throws (having sent nothing) if it cannot be sent as is. */
function sendResponse(res: http.ServerResponse, response: HttpResponse): void {
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
  for (const [name, value] of headers) res.setHeader(name, value);
  // Whatever the page is, it runs as an opaque origin: no script of a component acts as the API's origin.
  const policy = res.getHeader("Content-Security-Policy");
  res.setHeader("Content-Security-Policy", policy === undefined ? "sandbox" : [policy, "sandbox"].flat().map(String));
  res.setHeader("X-Content-Type-Options", "nosniff");
  if (EMPTY_STATUSES.has(response.status)) return sendEmpty(res, response.status);
  const body = response.body;
  const payload = body === null || body === undefined ? "" : typeof body === "string" ? body : Buffer.from(body.base64, "base64");
  if (!res.hasHeader("Content-Type")) {
    res.setHeader(
      "Content-Type",
      typeof payload !== "string"
        ? "application/octet-stream"
        : /^\s*</.test(payload)
          ? "text/html; charset=utf-8"
          : "text/plain; charset=utf-8",
    );
  }
  res.statusCode = response.status;
  res.setHeader("Content-Length", typeof payload === "string" ? Buffer.byteLength(payload) : payload.length);
  res.end(payload);
}

/** What a runner answers a request it was waited for by (a source's run, a workflow's). */
interface WaitedReply {
  readonly status: string;
  readonly ok?: boolean;
  readonly error?: { readonly message: string };
  readonly response?: HttpResponse;
  readonly position?: number;
}

/** An endpoint's answer: a custom response (a run's), a JSON document, or no body. */
type Answer =
  | { readonly custom: HttpResponse }
  | { readonly status: number; readonly json: unknown }
  | { readonly status: number; readonly json?: undefined };

const CORS_METHODS = "GET,HEAD,PUT,POST,DELETE,PATCH,OPTIONS";
const CORS_MAX_AGE = "600";

export interface EndpointOptions {
  /** Behind a trusted reverse proxy, the client's address (access log) is X-Forwarded-For's first. */
  readonly trustProxy: boolean;
  /** Each finished request, as the rest of the API reports them (metrics). */
  readonly onFinished?: (request: FinishedRequest) => void;
  readonly log?: Logger;
}

const clientAddress = (req: http.IncomingMessage, trustProxy: boolean): string => {
  const forwarded = req.headers["x-forwarded-for"];
  const first = trustProxy && typeof forwarded === "string" ? forwarded.split(",", 1)[0].trim() : "";
  return first || req.socket.remoteAddress || "";
};

/**
 * The HTTP interface of sources and workflows: any method and sub-path reach the run. Without
 * customResponse the answer comes once the invocation is durably queued; with it, once the run has
 * ended and its events are stored, carrying what the run passed to respond().
 *
 * Served on Node's request and response directly, beside the Koa application rather than inside
 * it: this is the hot path of every webhook, and Koa's context, middleware chain and response
 * machinery cost more than the rest of a queued request's work (bench/results/request-cost.md,
 * 2026-11-29). What the API's middlewares give every answer is given here the same way: the
 * request id, nosniff, CORS for any origin, error bodies and the access log and request metrics
 * (under the route `/e/{id}`).
 *
 * Returns a request listener that answers endpoint requests and returns false for anything else.
 */
export function sourceEndpoints(
  deps: Pick<
    ApiDeps,
    | "sources"
    | "components"
    | "admission"
    | "invocations"
    | "workflowsView"
    | "workflowRuns"
    | "projector"
    | "clock"
    | "settings"
    | "lifecycle"
    | "runner"
  >,
  options: EndpointOptions,
): (req: http.IncomingMessage, res: http.ServerResponse) => boolean {
  const maxBodyBytes = deps.settings.endpointMaxBodyBytes;
  const perSource = new RateLimiter({ ratePerSecond: deps.settings.endpointRatePerSecond, burst: deps.settings.endpointBurst });
  const base = options.log ?? log;

  async function readBody(req: http.IncomingMessage): Promise<Buffer> {
    const declared = req.headers["content-length"];
    try {
      return await getRawBody(req, { limit: maxBodyBytes, length: declared === undefined || declared === "" ? undefined : ~~declared });
    } catch (error) {
      if ((error as { status?: number }).status === 413) {
        throw new DomainError("payload_too_large", `request body is over ${maxBodyBytes} bytes`);
      }
      throw new DomainError("malformed_body", "the request body could not be read");
    }
  }

  /** A workflow's HTTP trigger: the same request handling; the run goes to the workflow runners. */
  async function workflowEndpoint(workflow: Workflow, req: http.IncomingMessage, querystring: string, subPath: string): Promise<Answer> {
    perSource.take(workflow.id, "to this endpoint");
    const raw = await readBody(req);
    const message = {
      invocationId: newId("inv"),
      workflowId: workflow.id,
      trigger: "http" as const,
      event: await httpEvent(req, querystring, raw, subPath),
      minPosition: deps.projector.position,
      enqueuedMs: deps.clock.now(),
      uniqueToRecord: true,
    };
    admit(message.invocationId, workflow.id, workflow.creatorId, message.event);
    if (workflow.trigger.type !== "http" || workflow.trigger.respond !== "workflow") {
      return queued(message.invocationId, deps.workflowRuns.submit(message));
    }
    const reply = await deps.admission.during(message.invocationId, deps.workflowRuns.submitAndWait(message, deps.settings.runWaitMs));
    return waited(reply, { gone: "no active workflow at this endpoint", failed: "the workflow failed before it responded" });
  }

  /** Counts a request against its emitter's, its owner's and the node's backlogs (429 or 503 past them). */
  const admit = (invocationId: string, emitterId: string, ownerId: string, event: HttpEvent) =>
    deps.admission.admit({ invocationId, sourceId: emitterId, ownerId, bytes: Buffer.byteLength(event.bodyRaw) + 1024 });

  /** The answer once the invocation is durably queued. */
  async function queued(invocationId: string, submitting: Promise<void>): Promise<Answer> {
    await deps.admission.during(invocationId, submitting);
    return { status: 200, json: { success: true, invocation_id: invocationId } };
  }

  /** The answer to a request whose run was waited for: its response, 204 when it gave none, or why there is none. */
  async function waited(reply: WaitedReply, words: { gone: string; failed: string }): Promise<Answer> {
    // Read-your-writes: once answered, the events the run caused are listable on this node.
    if (reply.position !== undefined) await deps.projector.waitFor(reply.position);
    if (reply.response) return { custom: reply.response };
    if (reply.status === "duplicate") throw responseLost();
    if (reply.status !== "done") throw new DomainError("not_found", words.gone);
    if (!reply.ok) throw new DomainError("run_failed", `${words.failed}: ${reply.error?.message ?? "unknown error"}`);
    return { status: 204 }; // the run ended without calling respond()
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

  /**
   * A request while the source's hooks run on this node (a provider checking the endpoint as the
   * hook creates its webhook): run at once beside them, answered by its response; what it emits
   * is not kept (see HookWindow).
   */
  async function besideHooks(window: HookWindow, req: http.IncomingMessage, querystring: string, subPath: string): Promise<Answer> {
    perSource.take(window.sourceId, "to this endpoint");
    const raw = await readBody(req);
    const invocationId = newId("inv");
    const outcome = await window.run(invocationId, await httpEvent(req, querystring, raw, subPath));
    if (outcome.emits.length > 0) {
      base.info(
        { sourceId: window.sourceId, invocationId, emitted: outcome.emits.length },
        "a request to a source while its hooks ran was run beside them; what it emitted was not kept",
      );
    }
    if (outcome.response) return { custom: outcome.response };
    if (!outcome.ok) throw new DomainError("run_failed", `the source's run failed: ${outcome.error?.message ?? "unknown error"}`);
    return window.customResponse ? { status: 204 } : { status: 200, json: { success: true, invocation_id: invocationId } };
  }

  async function endpoint(req: http.IncomingMessage, endpointId: string, querystring: string, subPath: string): Promise<Answer> {
    const window = deps.lifecycle.hookWindow(endpointId);
    if (window) return besideHooks(window, req, querystring, subPath);
    const source = deps.sources.byEndpoint(endpointId);
    if (!source) {
      const workflow = deps.workflowsView.byEndpoint(endpointId);
      if (workflow?.active && workflow.trigger.type === "http") return workflowEndpoint(workflow, req, querystring, subPath);
    }
    if (!source || !source.active) throw new DomainError("not_found", "no active source at this endpoint");

    perSource.take(source.id, "to this endpoint");

    const raw = await readBody(req);
    const component = deps.components.get(source.componentId);
    const customResponse =
      component !== undefined && httpInterface(component.meta.component.props, source.additionalProps)?.customResponse === true;
    const message = {
      invocationId: newId("inv"),
      sourceId: source.id,
      trigger: "http" as const,
      event: await httpEvent(req, querystring, raw, subPath),
      minPosition: deps.projector.position,
      enqueuedMs: deps.clock.now(),
      uniqueToRecord: true,
    };
    admit(message.invocationId, source.id, source.creatorId, message.event);
    if (!customResponse) return queued(message.invocationId, deps.invocations.submit(message));
    const words = { gone: "no active source at this endpoint", failed: "the source's run failed before it responded" };
    const inTurn = deps.admission.during(message.invocationId, deps.invocations.submitAndWait(message, deps.settings.runWaitMs));
    // Should its source's batch before it last (waiting, perhaps, on a provider that calls this endpoint first).
    const beside = deps.runner.besideIfLong(source.id, message.invocationId, message.event);
    if (beside === undefined) return waited(await inTurn, words);
    return Promise.race([
      inTurn.then((reply) => waited(reply, words)),
      beside.then(async (outcome) => (outcome?.response ? { custom: outcome.response } : waited(await inTurn, words))),
    ]);
  }

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, path: string, querystring: string, match: RegExpExecArray) {
    const method = req.method ?? "GET";
    const requestId = requestIdFor(req.headers["x-request-id"]);
    let child: Logger | undefined;
    const requestLogger = () => (child ??= base.child({ reqId: requestId }));
    whenFinished(res, process.hrtime.bigint(), (status, seconds) =>
      logAccess(
        base,
        requestLogger,
        { method, path, route: "/e/{id}", status, seconds, bytes: answeredBytes(res), ip: clientAddress(req, options.trustProxy) },
        options.onFinished,
      ),
    );
    res.setHeader("X-Request-Id", requestId);
    // No answer is ever sniffed into a page: JSON echoing event data stays JSON in a browser.
    res.setHeader("X-Content-Type-Options", "nosniff");
    // CORS for any origin, every method; a preflight is answered here and never reaches the run.
    res.setHeader("Vary", "Origin");
    if (method === "OPTIONS" && req.headers["access-control-request-method"]) {
      res.setHeader("Access-Control-Allow-Origin", "*");
      res.setHeader("Access-Control-Max-Age", CORS_MAX_AGE);
      res.setHeader("Access-Control-Allow-Methods", CORS_METHODS);
      const requested = req.headers["access-control-request-headers"];
      if (requested) res.setHeader("Access-Control-Allow-Headers", requested);
      // The body is not read: the request closes with the answer's end, as any answered before its body.
      return sendEmpty(res, 204);
    }
    if (method !== "OPTIONS") res.setHeader("Access-Control-Allow-Origin", "*");
    try {
      const answered = await endpoint(req, match[1], querystring, match[2] ?? "/");
      if ("custom" in answered) sendResponse(res, answered.custom);
      else if (answered.json === undefined) sendEmpty(res, answered.status);
      else sendJson(res, answered.status, answered.json);
    } catch (thrown) {
      const failed = errorAnswer(thrown, method, path, requestLogger);
      // Past the headers nothing else can be said: the connection ends, as Koa ended it.
      if (res.headersSent) return void res.destroy();
      for (const [name, value] of Object.entries(failed.headers)) res.setHeader(name, value);
      sendJson(res, failed.status, failed.body);
    }
  }

  return function endpointRequest(req, res): boolean {
    const { path, querystring } = requestTarget(req.url ?? "/");
    const match = ENDPOINT_PATH.exec(path);
    if (!match) return false;
    answer(req, res, path, querystring, match).catch((error: unknown) => {
      base.error({ err: error }, `${req.method ?? "GET"} ${path} failed while answering`);
      res.destroy();
    });
    return true;
  };
}
