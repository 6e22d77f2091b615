// JSON that crosses a trust boundary (request bodies, sandbox results, bus messages, stored
// values) is read through here: its nesting and size are checked on the text, before anything
// recursive (JSON.stringify, structured clone, validators, SQLite) can overflow the stack on it.

/** Deepest nesting of objects and arrays the platform stores, emits or returns (documented in the README). */
export const MAX_JSON_DEPTH = 128;
/**
 * Deepest nesting accepted from clients (request bodies, configured props, manual run events):
 * below MAX_JSON_DEPTH by what the platform wraps around them (the HTTP event, a $errors event's
 * original_event), so anything accepted can still be emitted and stored.
 */
export const MAX_INPUT_DEPTH = MAX_JSON_DEPTH - 8;
/** Envelopes the platform builds around user data (an invocation's payload) may go this deep. */
export const MAX_ENVELOPE_DEPTH = MAX_JSON_DEPTH + 8;

export type JsonLimit = "too_deep" | "too_large" | "malformed";

export class JsonLimitError extends Error {
  override readonly name = "JsonLimitError";
  constructor(
    readonly reason: JsonLimit,
    message: string,
  ) {
    super(message);
  }
}

export interface JsonBounds {
  /** Deepest nesting allowed (default MAX_JSON_DEPTH). */
  readonly maxDepth?: number;
  /** Longest text allowed, in UTF-16 code units (a cheap upper bound of bytes / 1). */
  readonly maxLength?: number;
}

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The nesting depth of JSON text (0 for a scalar), counted without parsing; stops as soon as
 * `limit` is passed and answers limit + 1. Brackets inside strings do not count. Malformed text
 * gets some answer; JSON.parse rejects it afterwards anyway.
 */
export function jsonDepth(text: string, limit = Number.MAX_SAFE_INTEGER): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: an escaped quote does not end it.
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return deepest;
}

/** Throws JsonLimitError when the text is longer or deeper than allowed. */
export function checkJsonText(text: string, bounds: JsonBounds = {}): void {
  const maxDepth = bounds.maxDepth ?? MAX_JSON_DEPTH;
  if (bounds.maxLength !== undefined && text.length > bounds.maxLength) {
    throw new JsonLimitError("too_large", `JSON text of ${text.length} characters is over the limit of ${bounds.maxLength}`);
  }
  if (jsonDepth(text, maxDepth) > maxDepth) {
    throw new JsonLimitError("too_deep", `JSON nested deeper than ${maxDepth} levels is not accepted`);
  }
}

/** JSON.parse behind the depth and size checks; malformed text is a JsonLimitError("malformed"). */
export function parseJson(text: string, bounds: JsonBounds = {}): unknown {
  checkJsonText(text, bounds);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new JsonLimitError("malformed", `not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * JSON.stringify for values that may come from users: a too-deep value (the stack overflows, or
 * the text is deeper than allowed) or one JSON cannot carry becomes a JsonLimitError.
 */
export function stringifyJson(value: unknown, bounds: JsonBounds = {}): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    if (error instanceof RangeError) throw new JsonLimitError("too_deep", "the value is nested too deeply to be stored as JSON");
    throw new JsonLimitError("malformed", `the value is not JSON-serializable: ${(error as Error).message}`);
  }
  if (text === undefined) text = "null";
  checkJsonText(text, bounds);
  return text;
}
