// Rules of the sandbox boundary that both sides apply: the isolate checks them to throw a clear
// error into the component, the trusted side (runner child, host) checks them again to decide.
// Pure code without Node imports: it is bundled into the isolate's prelude too.
import type { Send } from "./types.js";

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

/** $.send.*: sends recorded per run, and the largest one (bytes of its JSON). */
export const MAX_SENDS_PER_RUN = 16;
export const MAX_SEND_BYTES = 512 * 1024;
/** $.send.http: longest URL, most headers or query parameters, longest value of one. */
export const MAX_SEND_URL_CHARS = 8 * 1024;
export const MAX_SEND_FIELDS = 100;
/** $.send.email: longest subject; $.send.s3: longest prefix. */
export const MAX_EMAIL_SUBJECT_CHARS = 998;
export const MAX_S3_PREFIX_CHARS = 512;

/** Bytes of file data a run may keep in /tmp; a workflow's steps share them (each step gets the files of the one before). */
export const TMP_MAX_BYTES = 64 * 1024 * 1024;
/** Files and directories a workflow step may hand on to the next one in /tmp. */
export const MAX_TMP_ENTRIES = 10_000;
/** Longest /tmp path handed on. */
export const MAX_TMP_PATH_CHARS = 4096;

/** Error codes the isolate may propose for a run it reports; every other code is the platform's. */
export const ISOLATE_ERROR_CODES = ["USER_ERROR", "CONFIGURATION_ERROR", "LIMIT_EXCEEDED"] as const;

// Captured when the module is evaluated (in the isolate: at prelude start), so a component that
// replaces String or Array members still gets these checks as written.
const uncurry = Function.prototype.bind.bind(Function.prototype.call) as <A extends unknown[], R>(
  fn: (...args: A) => R,
) => (self: unknown, ...args: A) => R;
const charCodeAt = uncurry(String.prototype.charCodeAt);
const toLowerCase = uncurry(String.prototype.toLowerCase);
const sliceString = uncurry(String.prototype.slice);
const { isArray } = Array;
const { keys, create } = Object;
const { isInteger, isFinite, isSafeInteger } = Number;
const StringCtor = String;
const NumberCtor = Number;
const dateGetTime = uncurry(Date.prototype.getTime);
const dateParse = Date.parse;
const mathRound = Math.round;
const regExpTest = uncurry(RegExp.prototype.test);
const NUMERIC = /^\s*-?\d+(\.\d+)?\s*$/;
const quote = JSON.stringify;

/** RFC 7230 tchar: ! # $ % & ' * + - . ^ _ ` | ~ DIGIT ALPHA */
function isToken(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const c = charCodeAt(name, i);
    const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (
      !alnum &&
      !(
        c === 33 ||
        (c >= 35 && c <= 39) ||
        c === 42 ||
        c === 43 ||
        c === 45 ||
        c === 46 ||
        c === 94 ||
        c === 95 ||
        c === 96 ||
        c === 124 ||
        c === 126
      )
    )
      return false;
  }
  return true;
}

function hasLineBreakOrNul(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = charCodeAt(text, i);
    if (c === 13 || c === 10 || c === 0) return true;
  }
  return false;
}

function isThreeDigits(text: string): boolean {
  if (text.length !== 3) return false;
  for (let i = 0; i < 3; i++) {
    const c = charCodeAt(text, i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

export type Rule<T> = { ok: true; value: T } | { ok: false; message: string };

/** UTF-8 length without Buffer or TextEncoder (unpaired surrogates count 3, as they encode). */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = charCodeAt(text, i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = charCodeAt(text, i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * Whether JSON text nests deeper than `limit` (brackets inside strings do not count). The same
 * scan as json/bounded's jsonDepth, with the captured charCodeAt, for code in the isolate.
 */
export function deeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = charCodeAt(text, i);
    if (c === 0x22) {
      for (i++; i < text.length; i++) {
        const s = charCodeAt(text, i);
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** Whether text of `length` UTF-16 units can be over `max` UTF-8 bytes (else no count needed). */
export function mayExceedBytes(length: number, max: number): boolean {
  return length * 3 > max;
}

/** A final HTTP status: an integer or a string of digits ("200"), 200..599. */
export function checkStatus(status: unknown): Rule<number> {
  const n = typeof status === "string" && isThreeDigits(status) ? NumberCtor(status) : status;
  if (typeof n !== "number" || !isInteger(n)) {
    return {
      ok: false,
      message: `http.respond: status must be an integer (or a string of digits) from 200 to 599, got ${describe(status)}`,
    };
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
  const out: Record<string, string | string[]> = create(null);
  if (headers === undefined || headers === null) return { ok: true, value: out };
  if (typeof headers !== "object" || isArray(headers))
    return { ok: false, message: "http.respond: headers must be an object of header names to values" };
  let lines = 0;
  const names = keys(headers);
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const raw = (headers as Record<string, unknown>)[name];
    if (raw === undefined || raw === null) continue;
    if (!isToken(name)) return { ok: false, message: `http.respond: ${describe(name)} is not a valid header name` };
    const list = isArray(raw);
    const count = list ? (raw as unknown[]).length : 1;
    const texts: string[] = [];
    for (let j = 0; j < count; j++) {
      const v = list ? (raw as unknown[])[j] : raw;
      let text: string;
      if (typeof v === "string") text = v;
      else if ((typeof v === "number" && isFinite(v)) || typeof v === "boolean") text = StringCtor(v);
      else
        return {
          ok: false,
          message: `http.respond: the value of header "${name}" must be a string, number or boolean (or an array of them), got ${describe(v)}`,
        };
      if (hasLineBreakOrNul(text)) return { ok: false, message: `http.respond: the value of header "${name}" contains CR, LF or NUL` };
      if (mayExceedBytes(text.length, MAX_HEADER_VALUE_BYTES) && utf8Bytes(text) > MAX_HEADER_VALUE_BYTES) {
        return { ok: false, message: `http.respond: the value of header "${name}" is over ${MAX_HEADER_VALUE_BYTES} bytes` };
      }
      texts[j] = text;
    }
    lines += count;
    if (lines > MAX_RESPONSE_HEADERS) return { ok: false, message: `http.respond: at most ${MAX_RESPONSE_HEADERS} headers may be set` };
    out[toLowerCase(name)] = list ? texts : texts[0];
  }
  return { ok: true, value: out };
}

export interface MetaFields {
  id?: string | number;
  name?: string;
  summary?: string;
  ts?: number;
}

/** A Date of this realm or another (brand check: getTime throws for anything else). */
function timeOfDate(v: object): number | undefined {
  try {
    return dateGetTime(v);
  } catch {
    return undefined;
  }
}

function numberOf(v: object): number | undefined {
  if (isArray(v)) return undefined;
  try {
    const n = NumberCtor(v);
    return isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * $emit meta as registry components write it, made into what checkMeta takes: `null` is absent
 * (`summary: item.title` of an item without one), a number or boolean summary becomes its text,
 * and `ts` is read as a time however it came (a Date, a numeric or ISO 8601 string, a fractional
 * number rounded). A `ts` that is no time at all (`Date.parse(undefined)` is NaN) is dropped, so
 * the event gets the time it was emitted, and `tsDropped` says so for a warning: one item without
 * a date does not fail a polling source's whole run. Anything else is left for checkMeta to judge.
 */
export function normalizeMeta(
  id: unknown,
  name: unknown,
  summary: unknown,
  ts: unknown,
): { id: unknown; name: unknown; summary: unknown; ts: unknown; tsDropped: boolean } {
  let time: unknown = ts === null ? undefined : ts;
  let tsDropped = false;
  if (typeof time === "object" && time !== null) {
    // A Date; else a moment, dayjs or luxon time (their valueOf is epoch milliseconds).
    const t = timeOfDate(time) ?? numberOf(time);
    if (t !== undefined) time = t;
  } else if (typeof time === "string") {
    const t = regExpTest(NUMERIC, time) ? NumberCtor(time) : dateParse(time);
    if (isFinite(t)) time = t;
    else {
      time = undefined;
      tsDropped = true;
    }
  }
  if (typeof time === "number") {
    if (!isFinite(time)) {
      time = undefined;
      tsDropped = true;
    } else if (!isInteger(time)) time = mathRound(time);
  }
  return {
    id: id === null ? undefined : id,
    name: name === null ? undefined : name,
    summary: summary === null ? undefined : typeof summary === "number" || typeof summary === "boolean" ? StringCtor(summary) : summary,
    ts: time,
    tsDropped,
  };
}

/** $emit meta fields (absent fields are undefined). The summary is cut, every other rule refuses. */
export function checkMeta(id: unknown, name: unknown, summary: unknown, ts: unknown): Rule<MetaFields> {
  const out: MetaFields = {};
  if (id !== undefined) {
    if (typeof id === "string") {
      if (id.length > MAX_META_ID_CHARS)
        return { ok: false, message: `$emit: meta.id is ${id.length} characters, over the limit of ${MAX_META_ID_CHARS}` };
    } else if (!(typeof id === "number" && isFinite(id))) {
      return { ok: false, message: `$emit: meta.id must be a string or a number, got ${typeof id}` };
    }
    out.id = id;
  }
  if (name !== undefined) {
    if (typeof name !== "string") return { ok: false, message: `$emit: meta.name must be a string, got ${typeof name}` };
    if (name.length > MAX_META_NAME_CHARS)
      return { ok: false, message: `$emit: meta.name is ${name.length} characters, over the limit of ${MAX_META_NAME_CHARS}` };
    // The platform's own channels: an event emitted there would pass for a run's error or log.
    if (name === "$errors" || name === "$logs")
      return { ok: false, message: `$emit: meta.name "${name}" is reserved for the platform's channel of that name` };
    out.name = name;
  }
  if (summary !== undefined) {
    if (typeof summary !== "string") return { ok: false, message: `$emit: meta.summary must be a string, got ${typeof summary}` };
    out.summary = summary.length > MAX_META_SUMMARY_CHARS ? sliceString(summary, 0, MAX_META_SUMMARY_CHARS) : summary;
  }
  if (ts !== undefined) {
    if (!isSafeInteger(ts)) return { ok: false, message: `$emit: meta.ts must be an integer (epoch milliseconds), got ${describe(ts)}` };
    out.ts = ts as number;
  }
  return { ok: true, value: out };
}

function describe(v: unknown): string {
  if (typeof v === "string") return quote(v.length > 64 ? `${sliceString(v, 0, 64)}…` : v);
  if (typeof v === "number" || typeof v === "boolean" || v === null || v === undefined) return StringCtor(v);
  if (isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const SEND_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const SEND_METHOD_LIST = SEND_METHODS.join(", ");
const toUpperCase = uncurry(String.prototype.toUpperCase);

function isSendMethod(method: string): boolean {
  for (let i = 0; i < SEND_METHODS.length; i++) if (SEND_METHODS[i] === method) return true;
  return false;
}

function hasControlChar(text: string, orSpace = false): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = charCodeAt(text, i);
    if (c < 32 || c === 127 || (orSpace && c === 32)) return true;
  }
  return false;
}

/** "http://" or "https://" (any case) followed by a host: the destination parses the rest. */
function looksLikeHttpUrl(url: string): boolean {
  const lower = toLowerCase(url);
  const rest = sliceString(lower, 0, 8) === "https://" ? 8 : sliceString(lower, 0, 7) === "http://" ? 7 : 0;
  if (rest === 0 || url.length <= rest) return false;
  const first = charCodeAt(url, rest);
  return first !== 47 && first !== 63 && first !== 35; // a host, not "/", "?" or "#"
}

/** An S3 bucket name: 3-63 lower-case letters, digits, dots and hyphens, a letter or digit at each end. */
function isBucketName(name: string): boolean {
  if (name.length < 3 || name.length > 63) return false;
  for (let i = 0; i < name.length; i++) {
    const c = charCodeAt(name, i);
    const alnum = (c >= 48 && c <= 57) || (c >= 97 && c <= 122);
    if (!alnum && ((c !== 45 && c !== 46) || i === 0 || i === name.length - 1)) return false;
  }
  return true;
}

/** Strings by name (numbers and booleans converted), for headers and query parameters. */
function stringFields(value: unknown, what: string, header: boolean): Rule<Record<string, string>> {
  const out: Record<string, string> = create(null);
  if (value === undefined || value === null) return { ok: true, value: out };
  if (typeof value !== "object" || isArray(value)) return { ok: false, message: `${what} must be an object of names to strings` };
  const names = keys(value);
  if (names.length > MAX_SEND_FIELDS) return { ok: false, message: `${what} may have at most ${MAX_SEND_FIELDS} entries` };
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const v = (value as Record<string, unknown>)[name];
    if (v === undefined || v === null) continue;
    let text: string;
    if (typeof v === "string") text = v;
    else if ((typeof v === "number" && isFinite(v)) || typeof v === "boolean") text = StringCtor(v);
    else return { ok: false, message: `${what}.${name} must be a string, number or boolean, got ${describe(v)}` };
    if (header) {
      if (!isToken(name)) return { ok: false, message: `${what}: ${describe(name)} is not a valid header name` };
      if (hasLineBreakOrNul(text)) return { ok: false, message: `${what}.${name} contains CR, LF or NUL` };
    }
    if (mayExceedBytes(text.length, MAX_HEADER_VALUE_BYTES) && utf8Bytes(text) > MAX_HEADER_VALUE_BYTES)
      return { ok: false, message: `${what}.${name} is over ${MAX_HEADER_VALUE_BYTES} bytes` };
    out[header ? toLowerCase(name) : name] = text;
  }
  return { ok: true, value: out };
}

function optionalText(value: unknown, what: string): Rule<string | undefined> {
  if (value === undefined || value === null) return { ok: true, value: undefined };
  if (typeof value !== "string") return { ok: false, message: `${what} must be a string, got ${describe(value)}` };
  return { ok: true, value };
}

/**
 * One $.send.<kind>(config) as a destination: the config checked and normalized (method upper
 * case, POST by default; header names lower case; numbers as strings). The isolate calls it on
 * what the component passed, the trusted side again on what the isolate proposed. Sizes are the
 * caller's to check on the JSON text (MAX_SEND_BYTES).
 */
export function normalizeSend(kind: unknown, config: unknown): Rule<Send> {
  const what = `$.send.${typeof kind === "string" ? sliceString(kind, 0, 20) : "?"}`;
  if (typeof config !== "object" || config === null || isArray(config))
    return { ok: false, message: `${what} expects an object, got ${describe(config)}` };
  const c = config as Record<string, unknown>;
  if (kind === "http") {
    const method = c["method"] === undefined || c["method"] === null ? "POST" : c["method"];
    if (typeof method !== "string" || !isSendMethod(toUpperCase(method)))
      return { ok: false, message: `${what}: method must be one of ${SEND_METHOD_LIST}, got ${describe(method)}` };
    const url = c["url"];
    if (typeof url !== "string") return { ok: false, message: `${what}: url must be a string, got ${describe(url)}` };
    if (url.length > MAX_SEND_URL_CHARS) return { ok: false, message: `${what}: url is over ${MAX_SEND_URL_CHARS} characters` };
    if (!looksLikeHttpUrl(url) || hasControlChar(url, true))
      return { ok: false, message: `${what}: url must be an http:// or https:// URL, got ${describe(url)}` };
    const headers = stringFields(c["headers"], `${what}: headers`, true);
    if (!headers.ok) return headers;
    const params = stringFields(c["params"], `${what}: params`, false);
    if (!params.ok) return params;
    const data = c["data"];
    // Literals and spreads define properties: no setter a component put on Object.prototype runs.
    return {
      ok: true,
      value: {
        kind: "http",
        method: toUpperCase(method),
        url,
        headers: headers.value,
        ...(keys(params.value).length > 0 ? { params: params.value } : {}),
        ...(data !== undefined ? { data } : {}),
      },
    };
  }
  if (kind === "email") {
    const subject = c["subject"];
    if (typeof subject !== "string" || subject.length === 0)
      return { ok: false, message: `${what}: subject must be a non-empty string, got ${describe(subject)}` };
    if (subject.length > MAX_EMAIL_SUBJECT_CHARS)
      return { ok: false, message: `${what}: subject is over ${MAX_EMAIL_SUBJECT_CHARS} characters` };
    if (hasLineBreakOrNul(subject)) return { ok: false, message: `${what}: subject contains CR, LF or NUL` };
    const text = optionalText(c["text"], `${what}: text`);
    if (!text.ok) return text;
    const html = optionalText(c["html"], `${what}: html`);
    if (!html.ok) return html;
    return {
      ok: true,
      value: {
        kind: "email",
        subject,
        ...(text.value !== undefined ? { text: text.value } : {}),
        ...(html.value !== undefined ? { html: html.value } : {}),
      },
    };
  }
  if (kind === "s3") {
    const bucket = c["bucket"];
    if (typeof bucket !== "string" || !isBucketName(bucket))
      return {
        ok: false,
        message: `${what}: bucket must be an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens), got ${describe(bucket)}`,
      };
    const prefix = c["prefix"] === undefined || c["prefix"] === null ? "" : c["prefix"];
    if (typeof prefix !== "string") return { ok: false, message: `${what}: prefix must be a string, got ${describe(prefix)}` };
    if (prefix.length > MAX_S3_PREFIX_CHARS) return { ok: false, message: `${what}: prefix is over ${MAX_S3_PREFIX_CHARS} characters` };
    if (hasControlChar(prefix)) return { ok: false, message: `${what}: prefix contains control characters` };
    if (c["payload"] === undefined) return { ok: false, message: `${what}: payload is required (the JSON to store)` };
    return { ok: true, value: { kind: "s3", bucket, prefix, payload: c["payload"] } };
  }
  return { ok: false, message: `unknown destination ${describe(kind)} (http, email or s3)` };
}

/** The options of crypto.generateKeyPair the sandbox passes from the isolate and the host takes (the encodings aside). */
export const KEY_PAIR_OPTIONS: readonly string[] = [
  "modulusLength",
  "publicExponent",
  "hashAlgorithm",
  "mgf1HashAlgorithm",
  "saltLength",
  "hash",
  "mgf1Hash",
  "namedCurve",
  "paramEncoding",
];
