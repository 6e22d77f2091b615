// Rules of the sandbox boundary that both sides apply: the isolate checks them to throw a clear
// error into the component, the trusted side (runner child, host) checks them again to decide.
// Pure code without Node imports: it is bundled into the isolate's prelude too.

/** Longest this.db key (UTF-8 bytes). */
export const MAX_DB_KEY_BYTES = 1024;
/** $emit meta: longest string id, longest name, summary cut to this length. */
export const MAX_META_ID_CHARS = 1024;
export const MAX_META_NAME_CHARS = 200;
export const MAX_META_SUMMARY_CHARS = 1024;
/** http.respond: header lines (values counted one by one) and the longest value (bytes). */
export const MAX_RESPONSE_HEADERS = 100;
export const MAX_HEADER_VALUE_BYTES = 8 * 1024;
/** An error reported by the isolate: longest name, message, stack and $.flow.exit reason. */
export const MAX_ERROR_NAME_CHARS = 200;
export const MAX_ERROR_MESSAGE_CHARS = 8 * 1024;
export const MAX_ERROR_STACK_CHARS = 8 * 1024;
export const MAX_EXIT_REASON_CHARS = 8 * 1024;

/** Error codes the isolate may propose for a run it reports; every other code is the platform's. */
export const ISOLATE_ERROR_CODES = ["USER_ERROR", "CONFIGURATION_ERROR", "LIMIT_EXCEEDED"] as const;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORBIDDEN_IN_VALUE = /[\r\n\0]/;

export type Rule<T> = { ok: true; value: T } | { ok: false; message: string };

/** UTF-8 length without Buffer or TextEncoder (unpaired surrogates count 3, as they encode). */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** Whether text of `length` UTF-16 units can be over `max` UTF-8 bytes (else no count needed). */
export function mayExceedBytes(length: number, max: number): boolean {
  return length * 3 > max;
}

/** A final HTTP status: an integer or a string of digits ("200"), 200..599. */
export function checkStatus(status: unknown): Rule<number> {
  const n = typeof status === "string" && /^\d{3}$/.test(status) ? Number(status) : status;
  if (typeof n !== "number" || !Number.isInteger(n)) {
    return { ok: false, message: `http.respond: status must be an integer (or a string of digits) from 200 to 599, got ${describe(status)}` };
  }
  if (n >= 100 && n <= 199) {
    return { ok: false, message: `http.respond: status ${n} is informational (1xx) and cannot be the final response; use 200 to 599` };
  }
  if (n < 200 || n > 599) return { ok: false, message: `http.respond: status must be from 200 to 599, got ${n}` };
  return { ok: true, value: n };
}

/**
 * Response headers: names are RFC 7230 tokens (lower-cased here), values strings, finite numbers
 * or booleans (as strings) or arrays of those, without CR, LF or NUL; null/undefined skip the header.
 */
export function checkHeaders(headers: unknown): Rule<Record<string, string | string[]>> {
  const out: Record<string, string | string[]> = Object.create(null);
  if (headers === undefined || headers === null) return { ok: true, value: out };
  if (typeof headers !== "object" || Array.isArray(headers)) return { ok: false, message: "http.respond: headers must be an object of header names to values" };
  let lines = 0;
  for (const name of Object.keys(headers)) {
    const raw = (headers as Record<string, unknown>)[name];
    if (raw === undefined || raw === null) continue;
    if (!TOKEN.test(name)) return { ok: false, message: `http.respond: ${describe(name)} is not a valid header name` };
    const values = Array.isArray(raw) ? raw : [raw];
    const texts: string[] = [];
    for (const v of values) {
      let text: string;
      if (typeof v === "string") text = v;
      else if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") text = String(v);
      else return { ok: false, message: `http.respond: the value of header "${name}" must be a string, number or boolean (or an array of them), got ${describe(v)}` };
      if (FORBIDDEN_IN_VALUE.test(text)) return { ok: false, message: `http.respond: the value of header "${name}" contains CR, LF or NUL` };
      if (mayExceedBytes(text.length, MAX_HEADER_VALUE_BYTES) && utf8Bytes(text) > MAX_HEADER_VALUE_BYTES) {
        return { ok: false, message: `http.respond: the value of header "${name}" is over ${MAX_HEADER_VALUE_BYTES} bytes` };
      }
      texts.push(text);
    }
    lines += texts.length;
    if (lines > MAX_RESPONSE_HEADERS) return { ok: false, message: `http.respond: at most ${MAX_RESPONSE_HEADERS} headers may be set` };
    out[name.toLowerCase()] = Array.isArray(raw) ? texts : texts[0]!;
  }
  return { ok: true, value: out };
}

export interface MetaFields {
  id?: string | number;
  name?: string;
  summary?: string;
  ts?: number;
}

/** $emit meta fields (absent fields are undefined). The summary is cut, every other rule refuses. */
export function checkMeta(id: unknown, name: unknown, summary: unknown, ts: unknown): Rule<MetaFields> {
  const out: MetaFields = {};
  if (id !== undefined) {
    if (typeof id === "string") {
      if (id.length > MAX_META_ID_CHARS) return { ok: false, message: `$emit: meta.id is ${id.length} characters, over the limit of ${MAX_META_ID_CHARS}` };
    } else if (!(typeof id === "number" && Number.isFinite(id))) {
      return { ok: false, message: `$emit: meta.id must be a string or a number, got ${typeof id}` };
    }
    out.id = id;
  }
  if (name !== undefined) {
    if (typeof name !== "string") return { ok: false, message: `$emit: meta.name must be a string, got ${typeof name}` };
    if (name.length > MAX_META_NAME_CHARS) return { ok: false, message: `$emit: meta.name is ${name.length} characters, over the limit of ${MAX_META_NAME_CHARS}` };
    out.name = name;
  }
  if (summary !== undefined) {
    if (typeof summary !== "string") return { ok: false, message: `$emit: meta.summary must be a string, got ${typeof summary}` };
    out.summary = summary.length > MAX_META_SUMMARY_CHARS ? summary.slice(0, MAX_META_SUMMARY_CHARS) : summary;
  }
  if (ts !== undefined) {
    if (!Number.isSafeInteger(ts)) return { ok: false, message: `$emit: meta.ts must be an integer (epoch milliseconds), got ${describe(ts)}` };
    out.ts = ts as number;
  }
  return { ok: true, value: out };
}

function describe(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v);
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return String(v);
  return Array.isArray(v) ? "an array" : `a ${typeof v}`;
}
