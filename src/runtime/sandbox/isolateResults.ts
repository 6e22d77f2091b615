// The runner child's reading of what the isolate proposes at the end of a load or a run: JSON text
// parsed with bounds and validated strictly. Anything else means the platform's code inside the
// isolate did not run as written (built-ins replaced by the component), so the run fails closed.
import { checkJsonText, JsonLimitError, parseJson } from "../../json/bounded.js";
import type { SandboxLimits } from "../config.js";
import {
  ISOLATE_ERROR_CODES,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_ERROR_NAME_CHARS,
  MAX_ERROR_STACK_CHARS,
  MAX_EXIT_REASON_CHARS,
} from "../rules.js";
import type { InvocationError } from "../types.js";

export interface IsolateRunResult {
  ok: boolean;
  error?: InvocationError;
  returnValue?: string;
  exports?: string;
  exited?: { reason?: string };
  droppedLogLines: number;
}

export interface IsolateLoadResult {
  ok: boolean;
  error?: InvocationError;
  /** The component's description as JSON text (load for describe only). */
  describe?: string;
}

/** The result was refused; `limit` tells a size or depth limit from a malformed result. */
export class IsolateResultError extends Error {
  constructor(
    message: string,
    readonly limit: boolean,
  ) {
    super(message);
  }
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v);

/** Longest load result (the description of a component with many props and options). */
export const MAX_DESCRIBE_CHARS = 16 * 1024 * 1024;
/** The envelope of a run result: error fields, escaped return value and exports, some slack. */
function maxRunResultChars(limits: SandboxLimits): number {
  return (
    2 * 6 * limits.maxEmitBytes +
    6 * (MAX_ERROR_MESSAGE_CHARS + MAX_ERROR_STACK_CHARS + MAX_ERROR_NAME_CHARS + MAX_EXIT_REASON_CHARS) +
    4096
  );
}

function malformed(what: string): IsolateResultError {
  return new IsolateResultError(
    `the sandbox returned a malformed result (${what}); built-ins may have been replaced by the component`,
    false,
  );
}

function exactKeys(v: Rec, keys: readonly string[], what: string): void {
  const own = Object.keys(v);
  if (own.length !== keys.length || !keys.every((k) => Object.hasOwn(v, k)))
    throw malformed(`${what} must have exactly ${keys.join(", ")}`);
}

function readText(v: unknown, max: number, what: string): string {
  if (typeof v !== "string" || v.length > max) throw malformed(`${what} must be a string of at most ${max} characters`);
  return v;
}

function readIsolateError(v: unknown, codes: readonly string[]): InvocationError {
  if (!isRec(v)) throw malformed("error must be an object");
  exactKeys(v, ["name", "message", "stack", "code"], "error");
  const code = readText(v["code"], 64, "error.code");
  if (!codes.includes(code)) throw malformed(`error.code ${JSON.stringify(code)} is not one the component may report`);
  const error: InvocationError = {
    name: readText(v["name"], MAX_ERROR_NAME_CHARS, "error.name"),
    message: readText(v["message"], MAX_ERROR_MESSAGE_CHARS, "error.message"),
    code,
  };
  if (v["stack"] !== null) error.stack = readText(v["stack"], MAX_ERROR_STACK_CHARS, "error.stack");
  return error;
}

function parseEnvelope(raw: unknown, maxLength: number): Rec {
  if (typeof raw !== "string") throw malformed(`a ${typeof raw} instead of JSON text`);
  let parsed: unknown;
  try {
    // The envelope is flat: error fields are strings, user values travel as strings inside it.
    parsed = parseJson(raw, { maxDepth: 3, maxLength });
  } catch (err) {
    if (err instanceof JsonLimitError && err.reason === "too_large")
      throw new IsolateResultError(`the sandbox's result is over ${maxLength} characters`, true);
    throw malformed((err as Error).message);
  }
  if (!isRec(parsed)) throw malformed("not an object");
  return parsed;
}

/** A user value (return value, exports) as JSON text: bytes and depth within the limits. */
export function checkUserJson(text: string, what: string, maxBytes: number, objectOnly: boolean): void {
  const bytes = text.length * 3 > maxBytes ? Buffer.byteLength(text) : text.length;
  if (bytes > maxBytes) throw new IsolateResultError(`${what} is ${bytes} bytes of JSON, over the limit of ${maxBytes} bytes`, true);
  try {
    checkJsonText(text);
  } catch (err) {
    throw new IsolateResultError(`${what} is nested deeper than the limit: ${(err as Error).message}`, true);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed(`${what} is not valid JSON`);
  }
  if (objectOnly && !isRec(value)) throw malformed(`${what} must be an object`);
}

/** Reads the isolate's run result. Throws IsolateResultError when it cannot be accepted. */
export function readRunResult(raw: unknown, limits: SandboxLimits): IsolateRunResult {
  const v = parseEnvelope(raw, maxRunResultChars(limits));
  exactKeys(v, ["ok", "error", "returnValue", "exports", "exited", "droppedLogLines"], "the result");
  if (typeof v["ok"] !== "boolean") throw malformed("ok must be a boolean");
  const result: IsolateRunResult = { ok: v["ok"], droppedLogLines: 0 };
  if (v["error"] !== null) result.error = readIsolateError(v["error"], [...ISOLATE_ERROR_CODES, "LOAD_ERROR"]);
  // Fail closed: ok only together with no error, and an error only when not ok.
  if (result.ok === (result.error !== undefined)) throw malformed("ok and error disagree");
  const dropped = v["droppedLogLines"];
  if (!Number.isSafeInteger(dropped) || (dropped as number) < 0) throw malformed("droppedLogLines must be a count");
  result.droppedLogLines = dropped as number;
  if (v["returnValue"] !== null) {
    result.returnValue = readText(v["returnValue"], Number.MAX_SAFE_INTEGER, "returnValue");
    checkUserJson(result.returnValue, "the return value", limits.maxEmitBytes, false);
  }
  if (v["exports"] !== null) {
    result.exports = readText(v["exports"], Number.MAX_SAFE_INTEGER, "exports");
    checkUserJson(result.exports, "the exports ($.export)", limits.maxEmitBytes, true);
  }
  if (v["exited"] !== null) {
    const x = v["exited"];
    if (!isRec(x)) throw malformed("exited must be an object");
    exactKeys(x, ["reason"], "exited");
    result.exited = x["reason"] === null ? {} : { reason: readText(x["reason"], MAX_EXIT_REASON_CHARS, "exited.reason") };
    if (!result.ok) throw malformed("a run that exited cannot have failed");
  }
  if (!result.ok && (result.returnValue !== undefined || result.exports !== undefined))
    throw malformed("a failed run has no return value or exports");
  return result;
}

/** Reads the isolate's load result (with the description when `describe`). */
export function readLoadResult(raw: unknown, describe: boolean): IsolateLoadResult {
  if (typeof raw !== "string") throw malformed(`a ${typeof raw} instead of JSON text`);
  let parsed: unknown;
  try {
    parsed = parseJson(raw, { maxLength: MAX_DESCRIBE_CHARS });
  } catch (err) {
    if (err instanceof JsonLimitError && err.reason !== "malformed")
      throw new IsolateResultError(`the component's description is too large or too deep: ${err.message}`, true);
    throw malformed((err as Error).message);
  }
  if (!isRec(parsed)) throw malformed("not an object");
  exactKeys(parsed, ["ok", "error", "describe"], "the load result");
  if (typeof parsed["ok"] !== "boolean") throw malformed("ok must be a boolean");
  const result: IsolateLoadResult = { ok: parsed["ok"] };
  if (parsed["error"] !== null) result.error = readIsolateError(parsed["error"], ["LOAD_ERROR"]);
  if (result.ok === (result.error !== undefined)) throw malformed("ok and error disagree");
  if (result.ok && describe) {
    if (!isRec(parsed["describe"])) throw malformed("the description must be an object");
    result.describe = JSON.stringify(parsed["describe"]);
  } else if (parsed["describe"] !== null) {
    throw malformed("unexpected description");
  }
  return result;
}
