// Messages between the supervisor (host process) and a runner child process. The IPC channel uses
// JSON serialization (V8's JSON.parse is iterative: no message, however nested, can overflow the
// receiver's stack while decoding), and every user-derived part travels as a string of JSON text
// or as primitive fields. Each side checks the shape of every message it receives with the
// readers below before using it; the host also re-checks sizes and depth of the user's data.
import type { SandboxLimits } from "../config.js";
import { MAX_SENDS_PER_RUN, MAX_TMP_ENTRIES, MAX_TMP_PATH_CHARS, TMP_MAX_BYTES } from "../rules.js";
import type { EmitMeta, InvocationError, InvocationMethod, LogLine, TmpEntry } from "../types.js";

export interface WorkerInit {
  type: "init";
  prelude: string;
  limits: SandboxLimits;
  allowPrivateNetworks: boolean;
  maxWarmIsolates: number;
  maxWarmContexts: number;
}

export interface InvokeRequest {
  type: "invoke";
  id: number;
  /** Isolate tenancy key parts: never shared across owners, one warm context per source. */
  ownerId: string;
  sourceId: string;
  bundleKey: string;
  /** Present when the host believes the child does not hold this bundle yet. */
  bundle?: string;
  method: InvocationMethod;
  /** JSON payload for the isolate (props, event, http, steps, limits). */
  payload: string;
  /** The source's this.db snapshot as JSON text (an object). */
  db: string;
  timeoutMs: number;
  memoryMb: number;
  /** A workflow step: the /tmp the previous step left. */
  tmp?: WorkerTmpEntry[];
  /** A workflow step with a later step: answer the run's /tmp in the outcome. */
  keepTmp?: boolean;
  /** See Invocation.answerOnly. */
  answerOnly?: boolean;
}

/** A /tmp entry as it crosses the IPC channel (JSON): the bytes as base64, "" for a directory. */
export interface WorkerTmpEntry {
  path: string;
  kind: "file" | "dir";
  data: string;
  mtimeMs: number;
  birthtimeMs: number;
}

/** Runs of one source in order, answered with one batch-result: one IPC round trip for the batch. */
export interface InvokeBatchRequest {
  type: "invoke-batch";
  id: number;
  ownerId: string;
  sourceId: string;
  bundleKey: string;
  bundle?: string;
  method: InvocationMethod;
  /** Each run's own id (its logs and outcome are answered under it) and payload. */
  items: { id: number; payload: string }[];
  /** The db before the first item; each item's db is the one the previous item left. */
  db: string;
  /** Per item. */
  timeoutMs: number;
  memoryMb: number;
}

/** One item of a batch-result. */
export interface BatchItemResult {
  id: number;
  outcome: WorkerOutcome;
  logs: LogLine[];
  response?: WorkerResponse;
}

/** Largest batch a runner child accepts in one message. */
export const MAX_BATCH_ITEMS = 1000;

export interface DescribeRequest {
  type: "describe";
  id: number;
  bundle: string;
  timeoutMs: number;
  memoryMb: number;
}

export type HostToWorker =
  WorkerInit | InvokeRequest | InvokeBatchRequest | DescribeRequest | { type: "ping"; seq: number } | { type: "shutdown" };

/** One accepted emit: the event as JSON text, meta as primitive fields. */
export interface WorkerEmit {
  event: string;
  meta: EmitMeta;
}

export interface WorkerOutcome {
  ok: boolean;
  error?: InvocationError;
  emits: WorkerEmit[];
  /** The db snapshot as JSON text, present when dbChanged. */
  db?: string;
  dbChanged: boolean;
  /** Actions: JSON text of the return value and of the exports object. */
  returnValue?: string;
  exports?: string;
  exited?: { reason?: string };
  /** Actions: the accepted $.send.* destinations, each as JSON text. */
  sends?: string[];
  /** With keepTmp, a run that succeeded: what it left in /tmp. */
  tmp?: WorkerTmpEntry[];
  /** With answerOnly: an outbound request was refused. */
  reachedOut?: boolean;
  droppedLogLines: number;
  cpuMs: number;
  wallMs: number;
  warm: boolean;
}

/** A custom response as it crosses: headers as JSON text, the body as text or base64. */
export interface WorkerResponse {
  status: number;
  headers: string;
  body: string | null;
  base64: boolean;
}

export type WorkerToHost =
  | { type: "ready" }
  | { type: "pong"; seq: number }
  | { type: "logs"; id: number; lines: LogLine[] }
  | { type: "respond"; id: number; response: WorkerResponse }
  | { type: "need-bundle"; id: number }
  | { type: "result"; id: number; outcome: WorkerOutcome }
  | { type: "batch-result"; id: number; items: BatchItemResult[] }
  | { type: "described"; id: number; result: WorkerDescribeResult };

/** `describe` is the component's description as JSON text. */
export type WorkerDescribeResult = { ok: true; describe: string; logs: LogLine[] } | { ok: false; error: InvocationError; logs: LogLine[] };

/** What the runtime answers for describe (the host has parsed the description). */
export type DescribeResult = { ok: true; describe: unknown; logs: LogLine[] } | { ok: false; error: InvocationError; logs: LogLine[] };

/** Every code an InvocationError may carry. */
export const ERROR_CODES = new Set([
  "USER_ERROR",
  "CONFIGURATION_ERROR",
  "LOAD_ERROR",
  "TIMEOUT",
  "MEMORY_LIMIT",
  "RUNNER_CRASHED",
  "RUNNER_UNRESPONSIVE",
  "LIMIT_EXCEEDED",
  "ISOLATE_DISPOSED",
  "SANDBOX_FAILED",
  "SANDBOX_CORRUPTED",
  "SANDBOX_PROTOCOL",
  "RUNTIME_CLOSED",
]);

const METHODS = new Set(["run", "deploy", "activate", "deactivate", "additionalProps", "options"]);
const LOG_LEVELS = new Set(["log", "info", "warn", "error", "debug", "system"]);
/** Longest name, message and stack of an InvocationError crossing the process boundary. */
const MAX_ERROR_FIELD = 16 * 1024;

/** A message that fails its shape check; `id` names the invocation it belonged to, if readable. */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  constructor(
    message: string,
    readonly id: number | undefined,
  ) {
    super(message);
  }
}

type Rec = Record<string, unknown>;

export function isRec(v: unknown): v is Rec {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isPositiveInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isTime = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

function str(msg: Rec, key: string, id: number | undefined, max = Number.MAX_SAFE_INTEGER): string {
  const v = msg[key];
  if (typeof v !== "string" || v.length > max)
    throw new ProtocolError(`"${key}" must be a string${max < Number.MAX_SAFE_INTEGER ? ` of at most ${max} characters` : ""}`, id);
  return v;
}

export function readError(v: unknown, id: number | undefined): InvocationError {
  if (!isRec(v)) throw new ProtocolError("the error must be an object", id);
  const name = str(v, "name", id, MAX_ERROR_FIELD);
  const message = str(v, "message", id, MAX_ERROR_FIELD);
  const code = str(v, "code", id, 64);
  if (!ERROR_CODES.has(code)) throw new ProtocolError(`unknown error code ${JSON.stringify(code)}`, id);
  const out: InvocationError = { name, message, code };
  if (v["stack"] !== undefined) out.stack = str(v, "stack", id, MAX_ERROR_FIELD);
  return out;
}

/** Log lines as they cross (both directions use the same shape). */
export function readLogLines(v: unknown, id: number, maxLineChars: number): LogLine[] {
  if (!Array.isArray(v)) throw new ProtocolError("log lines must be an array", id);
  const lines: LogLine[] = [];
  for (const line of v) {
    if (!isRec(line) || !isTime(line["ts"]) || typeof line["level"] !== "string" || !LOG_LEVELS.has(line["level"])) {
      throw new ProtocolError("a log line must be { ts, level, message }", id);
    }
    lines.push({ ts: line["ts"], level: line["level"] as LogLine["level"], message: str(line, "message", id, maxLineChars) });
  }
  return lines;
}

function readLimits(v: unknown): SandboxLimits {
  if (!isRec(v)) throw new ProtocolError("limits must be an object", undefined);
  const keys: (keyof SandboxLimits)[] = [
    "timeoutMs",
    "memoryMb",
    "maxEmitBytes",
    "maxEmitsPerRun",
    "maxLogBytes",
    "maxLogLines",
    "maxLogLineChars",
    "maxDbBytes",
    "maxResponseBytes",
    "httpTimeoutMs",
    "httpMaxResponseBytes",
    "httpMaxConcurrent",
  ];
  const out: Record<string, number> = {};
  for (const k of keys) {
    if (!isPositiveInt(v[k])) throw new ProtocolError(`limits.${k} must be a positive integer`, undefined);
    out[k] = v[k];
  }
  return out as unknown as SandboxLimits;
}

/** Checks a message from the host (in the runner child). */
export function readHostMessage(raw: unknown): HostToWorker {
  if (!isRec(raw) || typeof raw["type"] !== "string") throw new ProtocolError("a message must be an object with a type", undefined);
  const id = isId(raw["id"]) ? raw["id"] : undefined;
  switch (raw["type"]) {
    case "init":
      if (
        typeof raw["allowPrivateNetworks"] !== "boolean" ||
        !isPositiveInt(raw["maxWarmIsolates"]) ||
        !isPositiveInt(raw["maxWarmContexts"])
      )
        throw new ProtocolError("malformed init", undefined);
      return {
        type: "init",
        prelude: str(raw, "prelude", undefined),
        limits: readLimits(raw["limits"]),
        allowPrivateNetworks: raw["allowPrivateNetworks"],
        maxWarmIsolates: raw["maxWarmIsolates"],
        maxWarmContexts: raw["maxWarmContexts"],
      };
    case "invoke": {
      if (id === undefined) throw new ProtocolError("an invocation needs an id", undefined);
      if (!METHODS.has(raw["method"] as string)) throw new ProtocolError("unknown method", id);
      if (!isPositiveInt(raw["timeoutMs"]) || !isPositiveInt(raw["memoryMb"]))
        throw new ProtocolError("timeoutMs and memoryMb must be positive integers", id);
      const msg: InvokeRequest = {
        type: "invoke",
        id,
        ownerId: str(raw, "ownerId", id, 1024),
        sourceId: str(raw, "sourceId", id, 1024),
        bundleKey: str(raw, "bundleKey", id, 1024),
        method: raw["method"] as InvocationMethod,
        payload: str(raw, "payload", id),
        db: str(raw, "db", id),
        timeoutMs: raw["timeoutMs"],
        memoryMb: raw["memoryMb"],
      };
      if (raw["bundle"] !== undefined) msg.bundle = str(raw, "bundle", id);
      if (raw["tmp"] !== undefined) msg.tmp = readTmp(raw["tmp"], id);
      if (raw["keepTmp"] !== undefined) {
        if (typeof raw["keepTmp"] !== "boolean") throw new ProtocolError("keepTmp must be a boolean", id);
        msg.keepTmp = raw["keepTmp"];
      }
      if (raw["answerOnly"] !== undefined) {
        if (typeof raw["answerOnly"] !== "boolean") throw new ProtocolError("answerOnly must be a boolean", id);
        msg.answerOnly = raw["answerOnly"];
      }
      return msg;
    }
    case "invoke-batch": {
      if (id === undefined) throw new ProtocolError("a batch needs an id", undefined);
      if (!METHODS.has(raw["method"] as string)) throw new ProtocolError("unknown method", id);
      if (!isPositiveInt(raw["timeoutMs"]) || !isPositiveInt(raw["memoryMb"]))
        throw new ProtocolError("timeoutMs and memoryMb must be positive integers", id);
      const items = raw["items"];
      if (!Array.isArray(items) || items.length === 0 || items.length > MAX_BATCH_ITEMS)
        throw new ProtocolError(`items must be 1 to ${MAX_BATCH_ITEMS} runs`, id);
      const msg: InvokeBatchRequest = {
        type: "invoke-batch",
        id,
        ownerId: str(raw, "ownerId", id, 1024),
        sourceId: str(raw, "sourceId", id, 1024),
        bundleKey: str(raw, "bundleKey", id, 1024),
        method: raw["method"] as InvocationMethod,
        items: items.map((item: unknown) => {
          if (!isRec(item) || !isId(item["id"])) throw new ProtocolError("a batch item must be { id, payload }", id);
          return { id: item["id"], payload: str(item, "payload", id) };
        }),
        db: str(raw, "db", id),
        timeoutMs: raw["timeoutMs"],
        memoryMb: raw["memoryMb"],
      };
      if (raw["bundle"] !== undefined) msg.bundle = str(raw, "bundle", id);
      return msg;
    }
    case "describe":
      if (id === undefined) throw new ProtocolError("a describe request needs an id", undefined);
      if (!isPositiveInt(raw["timeoutMs"]) || !isPositiveInt(raw["memoryMb"]))
        throw new ProtocolError("timeoutMs and memoryMb must be positive integers", id);
      return { type: "describe", id, bundle: str(raw, "bundle", id), timeoutMs: raw["timeoutMs"], memoryMb: raw["memoryMb"] };
    case "ping":
      if (!isTime(raw["seq"])) throw new ProtocolError("malformed ping", undefined);
      return { type: "ping", seq: raw["seq"] };
    case "shutdown":
      return { type: "shutdown" };
    default:
      throw new ProtocolError(`unknown message type ${JSON.stringify(String(raw["type"]).slice(0, 40))}`, id);
  }
}

/**
 * Checks the shape of a message from a runner child (in the host). The user-derived texts inside
 * (events, db, return value, exports, headers, description) are bounded and parsed by the caller.
 */
export function readWorkerMessage(raw: unknown, limits: SandboxLimits): WorkerToHost {
  if (!isRec(raw) || typeof raw["type"] !== "string") throw new ProtocolError("a message must be an object with a type", undefined);
  if (raw["type"] === "ready") return { type: "ready" };
  if (raw["type"] === "pong") return { type: "pong", seq: isTime(raw["seq"]) ? raw["seq"] : 0 };
  const id = raw["id"];
  if (!isId(id)) throw new ProtocolError("the message has no valid id", undefined);
  // Lines are cut at maxLogLineChars; the cut marker adds a few characters.
  const maxLine = limits.maxLogLineChars + 128;
  switch (raw["type"]) {
    case "logs":
      return { type: "logs", id, lines: readLogLines(raw["lines"], id, maxLine) };
    case "need-bundle":
      return { type: "need-bundle", id };
    case "respond":
      return { type: "respond", id, response: readResponse(raw["response"], id) };
    case "result":
      return { type: "result", id, outcome: readOutcome(raw["outcome"], id, limits) };
    case "batch-result": {
      const items = raw["items"];
      if (!Array.isArray(items) || items.length > MAX_BATCH_ITEMS) throw new ProtocolError("items must be an array of batch results", id);
      return {
        type: "batch-result",
        id,
        items: items.map((item: unknown) => {
          if (!isRec(item) || !isId(item["id"])) throw new ProtocolError("a batch result item must be { id, outcome, logs }", id);
          const out: BatchItemResult = {
            id: item["id"],
            outcome: readOutcome(item["outcome"], id, limits),
            logs: readLogLines(item["logs"], id, maxLine),
          };
          if (item["response"] !== undefined) out.response = readResponse(item["response"], id);
          return out;
        }),
      };
    }
    case "described": {
      const r = raw["result"];
      if (!isRec(r) || typeof r["ok"] !== "boolean") throw new ProtocolError("a describe result must be { ok, ... }", id);
      const logs = readLogLines(r["logs"], id, maxLine);
      if (r["ok"]) return { type: "described", id, result: { ok: true, describe: str(r, "describe", id), logs } };
      return { type: "described", id, result: { ok: false, error: readError(r["error"], id), logs } };
    }
    default:
      throw new ProtocolError(`unknown message type ${JSON.stringify(String(raw["type"]).slice(0, 40))}`, id);
  }
}

function readResponse(r: unknown, id: number): WorkerResponse {
  if (
    !isRec(r) ||
    !Number.isSafeInteger(r["status"]) ||
    typeof r["base64"] !== "boolean" ||
    (r["body"] !== null && typeof r["body"] !== "string")
  ) {
    throw new ProtocolError("a response must be { status, headers, body, base64 }", id);
  }
  return { status: r["status"] as number, headers: str(r, "headers", id), body: r["body"], base64: r["base64"] };
}

function readOutcome(v: unknown, id: number, limits: SandboxLimits): WorkerOutcome {
  if (!isRec(v)) throw new ProtocolError("the outcome must be an object", id);
  if (typeof v["ok"] !== "boolean" || typeof v["dbChanged"] !== "boolean" || typeof v["warm"] !== "boolean") {
    throw new ProtocolError("the outcome needs ok, dbChanged and warm booleans", id);
  }
  if (!isCount(v["droppedLogLines"]) || !isTime(v["cpuMs"]) || !isTime(v["wallMs"]))
    throw new ProtocolError("the outcome's counters are malformed", id);
  if (!Array.isArray(v["emits"])) throw new ProtocolError("emits must be an array", id);
  if (v["emits"].length > limits.maxEmitsPerRun) throw new ProtocolError(`more than ${limits.maxEmitsPerRun} emits`, id);
  const emits: WorkerEmit[] = [];
  for (const e of v["emits"]) {
    if (!isRec(e) || typeof e["event"] !== "string" || !isRec(e["meta"]))
      throw new ProtocolError("an emit must be { event: JSON text, meta }", id);
    emits.push({ event: e["event"], meta: e["meta"] });
  }
  const out: WorkerOutcome = {
    ok: v["ok"],
    emits,
    dbChanged: v["dbChanged"],
    droppedLogLines: v["droppedLogLines"],
    cpuMs: v["cpuMs"],
    wallMs: v["wallMs"],
    warm: v["warm"],
  };
  if (v["error"] !== undefined) out.error = readError(v["error"], id);
  if (out.ok === (out.error !== undefined)) throw new ProtocolError("an outcome has an error exactly when it is not ok", id);
  if (v["db"] !== undefined) out.db = str(v, "db", id);
  if (out.dbChanged !== (out.db !== undefined)) throw new ProtocolError("a db snapshot comes exactly when dbChanged", id);
  if (v["returnValue"] !== undefined) out.returnValue = str(v, "returnValue", id);
  if (v["exports"] !== undefined) out.exports = str(v, "exports", id);
  if (v["sends"] !== undefined) {
    const sends = v["sends"];
    if (!Array.isArray(sends) || sends.length > MAX_SENDS_PER_RUN || !sends.every((t) => typeof t === "string"))
      throw new ProtocolError(`sends must be at most ${MAX_SENDS_PER_RUN} strings of JSON text`, id);
    out.sends = sends;
  }
  if (v["tmp"] !== undefined) {
    if (!out.ok) throw new ProtocolError("only a run that succeeded hands its /tmp on", id);
    out.tmp = readTmp(v["tmp"], id);
  }
  if (v["reachedOut"] !== undefined) {
    if (v["reachedOut"] !== true) throw new ProtocolError("reachedOut is true when present", id);
    out.reachedOut = true;
  }
  if (v["exited"] !== undefined) {
    const x = v["exited"];
    if (!isRec(x) || (x["reason"] !== undefined && typeof x["reason"] !== "string"))
      throw new ProtocolError("exited must be { reason? }", id);
    out.exited = x["reason"] === undefined ? {} : { reason: str(x, "reason", id, MAX_ERROR_FIELD) };
  }
  return out;
}

/** An absolute, normalized path under /tmp (not /tmp itself), as the sandbox's store keeps them. */
export function isCarriedTmpPath(path: string): boolean {
  if (path.length > MAX_TMP_PATH_CHARS || !path.startsWith("/tmp/") || path.includes("\0")) return false;
  return path
    .slice("/tmp/".length)
    .split("/")
    .every((part) => part !== "" && part !== "." && part !== "..");
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Bytes a base64 text decodes to. */
function base64Bytes(text: string): number {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return (text.length / 4) * 3 - padding;
}

/**
 * What is wrong with a /tmp as it crosses, or undefined: at most MAX_TMP_ENTRIES entries, paths
 * under /tmp once each, a directory without bytes, and TMP_MAX_BYTES of files in all. `bytesOf`
 * reads an entry's data in the form it crosses in (undefined when it is not of that form).
 */
function tmpEntriesProblem(entries: unknown, bytesOf: (data: unknown) => number | undefined): string | undefined {
  if (!Array.isArray(entries) || entries.length > MAX_TMP_ENTRIES) return `/tmp must be an array of at most ${MAX_TMP_ENTRIES} entries`;
  const paths = new Set<string>();
  let total = 0;
  for (const e of entries as unknown[]) {
    const size = isRec(e) ? bytesOf(e["data"]) : undefined;
    if (
      !isRec(e) ||
      size === undefined ||
      typeof e["path"] !== "string" ||
      !isCarriedTmpPath(e["path"]) ||
      paths.has(e["path"]) ||
      (e["kind"] !== "file" && e["kind"] !== "dir") ||
      (e["kind"] === "dir" && size > 0) ||
      typeof e["mtimeMs"] !== "number" ||
      !Number.isFinite(e["mtimeMs"]) ||
      typeof e["birthtimeMs"] !== "number" ||
      !Number.isFinite(e["birthtimeMs"])
    )
      return "each /tmp entry must be { path under /tmp (once), kind file|dir, data (none for a dir), mtimeMs, birthtimeMs }";
    paths.add(e["path"]);
    total += size;
    if (total > TMP_MAX_BYTES) return `/tmp holds more than ${TMP_MAX_BYTES} bytes of files`;
  }
  return undefined;
}

/** A /tmp as it crosses the IPC channel (either way), its bytes as base64 text; throws ProtocolError. */
export function readTmp(v: unknown, id: number | undefined): WorkerTmpEntry[] {
  const problem = tmpEntriesProblem(v, (data) =>
    typeof data === "string" && data.length % 4 === 0 && BASE64.test(data) ? base64Bytes(data) : undefined,
  );
  if (problem !== undefined) throw new ProtocolError(problem, id);
  return (v as WorkerTmpEntry[]).map(({ path, kind, data, mtimeMs, birthtimeMs }) => ({ path, kind, data, mtimeMs, birthtimeMs }));
}

/** What is wrong with a /tmp given to an invocation (its bytes as Uint8Arrays), or undefined. */
export function tmpProblem(entries: unknown): string | undefined {
  return tmpEntriesProblem(entries, (data) => (data instanceof Uint8Array ? data.byteLength : undefined));
}

/** /tmp entries for the IPC channel: the bytes as base64 (only the view's own bytes). */
export function tmpToWire(entries: readonly TmpEntry[]): WorkerTmpEntry[] {
  return entries.map((e) => ({
    path: e.path,
    kind: e.kind,
    data: e.kind === "dir" ? "" : Buffer.from(e.data.buffer, e.data.byteOffset, e.data.byteLength).toString("base64"),
    mtimeMs: e.mtimeMs,
    birthtimeMs: e.birthtimeMs,
  }));
}

/**
 * /tmp entries from the IPC channel (checked by readTmp). Each file gets an ArrayBuffer of its own:
 * a small Buffer is a view into a shared pool, and copying a view into an isolate copies its
 * whole buffer.
 */
export function tmpFromWire(entries: readonly WorkerTmpEntry[]): TmpEntry[] {
  return entries.map((e) => ({
    path: e.path,
    kind: e.kind,
    data: new Uint8Array(Buffer.from(e.data, "base64")),
    mtimeMs: e.mtimeMs,
    birthtimeMs: e.birthtimeMs,
  }));
}
