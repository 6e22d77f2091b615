// this.$emit and http.respond: checked here so the component gets a clear error at once, then
// delivered to the runner child in order, which checks everything again and decides.
import { MAX_JSON_DEPTH } from "../../json/bounded.js";
import { checkHeaders, checkMeta, checkStatus, deeperThan, mayExceedBytes, normalizeMeta, utf8Bytes } from "../rules.js";
import { host } from "./bridge.js";
import { systemWarning } from "./console.js";
import { current } from "./invocationState.js";
import { LimitError } from "./limitError.js";
import { ArrayIsArray, stringify } from "./primordials.js";

export class EmitError extends LimitError {
  override name = "EmitError";
}

export class ResponseLimitError extends LimitError {
  override name = "ResponseLimitError";
}

export function emit(event: unknown, meta?: unknown): void {
  const s = current();
  if (meta !== undefined && meta !== null && (typeof meta !== "object" || ArrayIsArray(meta))) {
    throw new TypeError("$emit: the second argument (meta) must be an object with id, name, summary, ts");
  }
  const m = (meta ?? {}) as Record<string, unknown>;
  const given = normalizeMeta(m["id"], m["name"], m["summary"], m["ts"]);
  const checked = checkMeta(given.id, given.name, given.summary, given.ts);
  if (!checked.ok) throw new TypeError(checked.message);
  if (given.tsDropped && !s.warnedTs) {
    s.warnedTs = true;
    systemWarning("$emit: meta.ts was not a time (NaN, or text no date parses from), so the event has the time it was emitted");
  }
  if (s.emits >= s.limits.maxEmitsPerRun) {
    throw new EmitError(`$emit: at most ${s.limits.maxEmitsPerRun} events may be emitted per invocation`);
  }
  let json: string | undefined;
  try {
    json = stringify(event === undefined ? null : event);
  } catch (err) {
    if (err instanceof RangeError)
      throw new EmitError(`$emit: the event is nested too deeply to serialize as JSON (the limit is ${MAX_JSON_DEPTH} levels)`);
    throw new TypeError(`$emit: the event is not JSON-serializable: ${(err as Error).message}`);
  }
  if (json === undefined) json = "null";
  const max = s.limits.maxEmitBytes;
  if (json.length > max || (mayExceedBytes(json.length, max) && utf8Bytes(json) > max)) {
    throw new EmitError(`$emit: the event is ${utf8Bytes(json)} bytes of JSON, over the limit of ${max} bytes per event`);
  }
  if (deeperThan(json, MAX_JSON_DEPTH)) throw new EmitError(`$emit: the event is nested deeper than ${MAX_JSON_DEPTH} levels`);
  s.emits++;
  const v = checked.value;
  host().emit(json, v.id, v.name, v.summary, v.ts);
}

/**
 * http.respond for one invocation. `strict` (a source with customResponse, or an action) throws
 * a clear error for an invalid response; otherwise the HTTP answer was already sent when the
 * request was queued, so an invalid response only writes a warning and never throws.
 */
export function makeRespond(strict: boolean, warn: (message: string) => void): (response: unknown) => void {
  return (response: unknown) => {
    let problem: Error | undefined;
    try {
      respond(response);
    } catch (err) {
      problem = err as Error;
    }
    if (!problem) return;
    if (strict) throw problem;
    warn(`http.respond was ignored: ${problem.message}`);
  };
}

function respond(response: unknown): void {
  const s = current();
  if (typeof response !== "object" || response === null) throw new TypeError("http.respond expects an object { status, headers, body }");
  const r = response as { status?: unknown; statusCode?: unknown; headers?: unknown; body?: unknown };
  // No status is 200, as in Node and most frameworks; without `status`, Node's `statusCode` is read
  // (published Salesforce sources answer `respond({ statusCode: 200 })`).
  const status = checkStatus(r.status !== undefined ? r.status : r.statusCode !== undefined ? r.statusCode : 200);
  if (!status.ok) throw new RangeError(status.message);
  const headers = checkHeaders(r.headers);
  if (!headers.ok) throw new TypeError(headers.message);
  const h = headers.value;
  let kind: "empty" | "text" | "json" | "bytes";
  let body: string | Uint8Array | null;
  let size: number;
  const b = r.body;
  if (b === undefined || b === null) {
    kind = "empty";
    body = null;
    size = 0;
  } else if (typeof b === "string") {
    kind = "text";
    body = b;
    size = utf8Bytes(b);
  } else if (b instanceof ArrayBuffer || ArrayBuffer.isView(b)) {
    kind = "bytes";
    const bytes = b instanceof ArrayBuffer ? new Uint8Array(b) : new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    // A copy: a Buffer is a view into a shared pool, and the host must get exactly these bytes.
    body = new Uint8Array(bytes);
    size = bytes.byteLength;
  } else {
    kind = "json";
    let text: string | undefined;
    try {
      text = stringify(b);
    } catch (err) {
      if (err instanceof RangeError) throw new ResponseLimitError("http.respond: the body is nested too deeply to serialize as JSON");
      throw new TypeError(`http.respond: the body is not JSON-serializable: ${(err as Error).message}`);
    }
    if (text === undefined) throw new TypeError("http.respond: the body has no JSON form");
    if (deeperThan(text, MAX_JSON_DEPTH))
      throw new ResponseLimitError(`http.respond: the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
    body = text;
    size = utf8Bytes(text);
    if (h["content-type"] === undefined) h["content-type"] = "application/json; charset=utf-8";
  }
  if (size > s.limits.maxResponseBytes) {
    throw new ResponseLimitError(`http.respond: the body is ${size} bytes, over the limit of ${s.limits.maxResponseBytes} bytes`);
  }
  if (s.responded) return; // first respond wins
  s.responded = true;
  host().respond(status.value, stringify(h), kind, body);
}
