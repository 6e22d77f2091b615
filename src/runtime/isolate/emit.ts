// this.$emit and http.respond: validated in the isolate, delivered to the host in order.
import { Buffer } from "buffer";
import { host } from "./bridge.js";
import { current } from "./invocationState.js";
import { utf8Length } from "./textCodec.js";
import { stringify } from "./primordials.js";

export class EmitError extends Error {
  override name = "EmitError";
}

export function emit(event: unknown, meta?: unknown): void {
  const s = current();
  if (meta !== undefined && meta !== null && (typeof meta !== "object" || Array.isArray(meta))) {
    throw new TypeError("$emit: the second argument (meta) must be an object with id, name, summary, ts");
  }
  const m = (meta ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  if (m["id"] !== undefined) {
    if (typeof m["id"] !== "string" && !(typeof m["id"] === "number" && Number.isFinite(m["id"]))) {
      throw new TypeError(`$emit: meta.id must be a string or a number, got ${typeof m["id"]}`);
    }
    out["id"] = m["id"];
  }
  if (m["name"] !== undefined) {
    if (typeof m["name"] !== "string") throw new TypeError(`$emit: meta.name must be a string, got ${typeof m["name"]}`);
    out["name"] = m["name"];
  }
  if (m["summary"] !== undefined) {
    if (typeof m["summary"] !== "string") throw new TypeError(`$emit: meta.summary must be a string, got ${typeof m["summary"]}`);
    out["summary"] = m["summary"];
  }
  if (m["ts"] !== undefined) {
    if (!Number.isInteger(m["ts"])) throw new TypeError(`$emit: meta.ts must be an integer (epoch milliseconds), got ${String(m["ts"])}`);
    out["ts"] = m["ts"];
  }
  if (s.emits >= s.limits.maxEmitsPerRun) {
    throw new EmitError(`$emit: at most ${s.limits.maxEmitsPerRun} events may be emitted per invocation`);
  }
  let json: string | undefined;
  try {
    json = stringify(event === undefined ? null : event);
  } catch (err) {
    throw new TypeError(`$emit: the event is not JSON-serializable: ${(err as Error).message}`);
  }
  if (json === undefined) json = "null";
  const max = s.limits.maxEmitBytes;
  if (json.length > max || utf8Length(json) > max) {
    throw new EmitError(`$emit: the event is ${utf8Length(json)} bytes of JSON, over the limit of ${max} bytes per event`);
  }
  s.emits++;
  host().emit(json, stringify(out));
}

export function respond(response: unknown): void {
  const s = current();
  if (typeof response !== "object" || response === null) throw new TypeError("http.respond expects an object { status, headers, body }");
  const r = response as { status?: unknown; headers?: unknown; body?: unknown };
  if (!Number.isInteger(r.status) || (r.status as number) < 100 || (r.status as number) > 599) {
    throw new RangeError(`http.respond: status must be an integer from 100 to 599, got ${String(r.status)}`);
  }
  const headers: Record<string, string | string[]> = {};
  if (r.headers !== undefined && r.headers !== null) {
    if (typeof r.headers !== "object") throw new TypeError("http.respond: headers must be an object");
    for (const [k, v] of Object.entries(r.headers as Record<string, unknown>)) {
      if (v === undefined || v === null) continue;
      headers[k.toLowerCase()] = Array.isArray(v) ? v.map(String) : String(v);
    }
  }
  let body: string | { base64: string } | null;
  let size: number;
  const b = r.body;
  if (b === undefined || b === null) {
    body = null;
    size = 0;
  } else if (typeof b === "string") {
    body = b;
    size = utf8Length(b);
  } else if (b instanceof Uint8Array || b instanceof ArrayBuffer || ArrayBuffer.isView(b)) {
    const bytes = b instanceof ArrayBuffer ? new Uint8Array(b) : new Uint8Array((b as ArrayBufferView).buffer, (b as ArrayBufferView).byteOffset, (b as ArrayBufferView).byteLength);
    body = { base64: Buffer.from(bytes).toString("base64") };
    size = bytes.byteLength;
  } else {
    body = stringify(b);
    size = utf8Length(body);
    if (headers["content-type"] === undefined) headers["content-type"] = "application/json; charset=utf-8";
  }
  if (size > s.limits.maxResponseBytes) {
    throw new RangeError(`http.respond: the body is ${size} bytes, over the limit of ${s.limits.maxResponseBytes} bytes`);
  }
  if (s.responded) return; // first respond wins
  s.responded = true;
  host().respond(stringify({ status: r.status, headers, body }));
}
