// Entry of a runner child process (forked by the Runtime supervisor). It owns isolates: one warm
// slot per (owner, source), an LRU over them, and the per-invocation timeout and memory limit.
// Trusted code: it reads the isolate's proposals (isolateResults.ts) and decides the outcome.
import type { HttpResponse, InvocationError, LogLine } from "../types.js";
import { IsolateResultError, readRunResult } from "./isolateResults.js";
import { IsolateSlot, InvocationRecord, takeReusableSlot, type SlotEnv } from "./isolateSlot.js";
import {
  ProtocolError,
  readHostMessage,
  type BatchItemResult,
  type DescribeRequest,
  type InvokeBatchRequest,
  type InvokeRequest,
  type WorkerOutcome,
  type WorkerResponse,
  type WorkerToHost,
} from "./protocol.js";

let env: SlotEnv | undefined;
let maxWarm = 64;
const slots = new Map<string, IsolateSlot>();
/** Cold starts under way: their isolates join `slots` once loaded. */
let starting = 0;
const queues = new Map<string, Promise<void>>();
const bundles = new Map<string, string>();
const MAX_BUNDLES = 256;
const pendingLogs = new Map<number, LogLine[]>();
let flushScheduled = false;

function send(msg: WorkerToHost): void {
  try {
    process.send?.(msg);
  } catch (err) {
    // Only a bug can get here (every part of a message is a string or a primitive field).
    process.stderr.write(`headwater runner: cannot send a ${msg.type} message: ${String((err as Error)?.message ?? err)}\n`);
  }
}

function wireResponse(r: HttpResponse): WorkerResponse {
  const base64 = r.body !== null && typeof r.body === "object";
  return {
    status: r.status,
    headers: JSON.stringify(r.headers),
    body: r.body === null ? null : typeof r.body === "string" ? r.body : r.body.base64,
    base64,
  };
}

function flushLogs(): void {
  flushScheduled = false;
  for (const [id, lines] of pendingLogs) send({ type: "logs", id, lines });
  pendingLogs.clear();
}

function queueLog(id: number, line: LogLine): void {
  let lines = pendingLogs.get(id);
  if (!lines) pendingLogs.set(id, (lines = []));
  lines.push(line);
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flushLogs);
  }
}

function flushLogsOf(id: number): void {
  const lines = pendingLogs.get(id);
  if (lines) {
    pendingLogs.delete(id);
    send({ type: "logs", id, lines });
  }
}

function rememberBundle(key: string, bundle: string): void {
  bundles.delete(key);
  bundles.set(key, bundle);
  if (bundles.size > MAX_BUNDLES) bundles.delete(bundles.keys().next().value as string);
}

function touch(key: string, slot: IsolateSlot): void {
  slots.delete(key);
  slots.set(key, slot);
  if (slots.size <= maxWarm) return;
  for (const [k, s] of slots) {
    if (slots.size <= maxWarm) break;
    if (s.current) continue;
    s.dispose();
    slots.delete(k);
  }
}

function classify(
  err: unknown,
  rec: InvocationRecord,
  slot: IsolateSlot | undefined,
  timeoutMs: number,
  memoryMb: number,
): InvocationError {
  if (err instanceof IsolateResultError) {
    return err.limit
      ? { name: "LimitExceededError", code: "LIMIT_EXCEEDED", message: err.message }
      : { name: "SandboxError", code: "SANDBOX_CORRUPTED", message: `${err.message}, so its isolate was discarded` };
  }
  const message = String((err as Error)?.message ?? err);
  if (rec.timedOut) {
    return { name: "TimeoutError", code: "TIMEOUT", message: `the invocation did not finish within ${timeoutMs} ms and was stopped` };
  }
  // Only a disposed isolate counts: an error the component made up cannot claim these codes.
  const disposed = slot !== undefined && (slot.disposed || slot.isolate.isDisposed);
  if (disposed && /memory limit/i.test(message)) {
    return {
      name: "MemoryLimitError",
      code: "MEMORY_LIMIT",
      message: `the invocation exceeded the memory limit of ${memoryMb} MB and was stopped`,
    };
  }
  if (disposed) return { name: "SandboxError", code: "ISOLATE_DISPOSED", message: `the sandbox was stopped: ${message.slice(0, 500)}` };
  // The platform's own code in the isolate failed: almost always built-ins the component replaced.
  return {
    name: "SandboxError",
    code: "SANDBOX_FAILED",
    message: `the sandbox failed outside the component's code (${message.slice(0, 500)}); built-ins may have been replaced by the component, so its isolate was discarded`,
  };
}

/** Where one run's log lines and custom response go: straight to the host, or kept for a batch's one answer. */
interface RunSink {
  log(line: LogLine): void;
  respond(response: HttpResponse): void;
}

/** What one run needs (an invoke message, or one item of a batch with the db the previous item left). */
type RunInput = Pick<
  InvokeRequest,
  "id" | "ownerId" | "sourceId" | "bundleKey" | "bundle" | "method" | "payload" | "db" | "timeoutMs" | "memoryMb"
>;

async function runInvocation(msg: InvokeRequest): Promise<void> {
  const sink: RunSink = {
    log: (line) => queueLog(msg.id, line),
    respond: (response) => {
      // Log lines written before the response go first, as the isolate wrote them.
      flushLogsOf(msg.id);
      send({ type: "respond", id: msg.id, response: wireResponse(response) });
    },
  };
  const outcome = await execute(msg, sink);
  flushLogsOf(msg.id);
  if (outcome === "need-bundle") send({ type: "need-bundle", id: msg.id });
  else send({ type: "result", id: msg.id, outcome });
}

/**
 * Runs a batch of one source's invocations in order in its warm isolate and answers once: each
 * item's outcome, log lines and response. Each item has its own timeout and limits; the db an item
 * leaves is the next item's db. A failing or timed-out item does not stop the ones after it.
 */
async function runBatch(msg: InvokeBatchRequest): Promise<void> {
  const answers: BatchItemResult[] = [];
  let db = msg.db;
  for (const item of msg.items) {
    const logs: LogLine[] = [];
    let response: WorkerResponse | undefined;
    const sink: RunSink = { log: (line) => logs.push(line), respond: (r) => (response = wireResponse(r)) };
    const outcome = await execute({ ...msg, id: item.id, payload: item.payload, db }, sink);
    if (outcome === "need-bundle") {
      send({ type: "need-bundle", id: msg.id });
      return;
    }
    if (outcome.dbChanged && outcome.db !== undefined) db = outcome.db;
    answers.push({ id: item.id, outcome, logs, ...(response ? { response } : {}) });
  }
  send({ type: "batch-result", id: msg.id, items: answers });
}

async function execute(msg: RunInput, sink: RunSink): Promise<WorkerOutcome | "need-bundle"> {
  if (!env) throw new Error("runner not initialised");
  const started = process.hrtime.bigint();
  const slotKey = `${msg.ownerId}\u0000${msg.sourceId}`;
  const rec = new InvocationRecord(
    msg.id,
    Date.now() + msg.timeoutMs,
    msg.db,
    env.limits.maxDbBytes,
    (line) => sink.log(line),
    (response) => sink.respond(response),
  );
  let slot = slots.get(slotKey);
  if (slot && (slot.bundleKey !== msg.bundleKey || slot.memoryMb !== msg.memoryMb || slot.disposed)) {
    slot.dispose();
    slots.delete(slotKey);
    slot = undefined;
  }
  const warm = slot !== undefined;
  let active: IsolateSlot | undefined = slot;
  const timer = setTimeout(() => {
    rec.timedOut = true;
    active?.dispose();
  }, msg.timeoutMs);
  let cpuStart = 0n;
  let needBundle = false;
  let droppedInIsolate = 0;
  const outcome: WorkerOutcome = { ok: false, emits: [], dbChanged: false, droppedLogLines: 0, cpuMs: 0, wallMs: 0, warm };
  try {
    if (!active) {
      const bundle = msg.bundle ?? bundles.get(msg.bundleKey);
      if (bundle === undefined) {
        needBundle = true;
        return "need-bundle";
      }
      const reusable = takeReusableSlot(slots, slots.size + starting, maxWarm, msg);
      active = reusable?.takeOver(slotKey) ?? new IsolateSlot(slotKey, msg.bundleKey, msg.memoryMb, env);
      active.current = rec;
      cpuStart = active.cpuTimeNs();
      starting++;
      const loaded = await active.init(bundle).finally(() => starting--);
      if (!loaded.ok) {
        outcome.error = loaded.error ?? { name: "Error", message: "the component failed to load", code: "LOAD_ERROR" };
        active.dispose();
        return outcome;
      }
      touch(slotKey, active);
    } else {
      touch(slotKey, active);
      active.current = rec;
      cpuStart = active.cpuTimeNs();
    }
    const proposed = await active.invoke(msg.payload, msg.db);
    await active.settleDispatches();
    const r = readRunResult(proposed, env.limits);
    outcome.ok = r.ok;
    if (r.error) outcome.error = r.error;
    if (r.returnValue !== undefined) outcome.returnValue = r.returnValue;
    if (r.exports !== undefined) outcome.exports = r.exports;
    if (r.exited) outcome.exited = r.exited;
    droppedInIsolate = r.droppedLogLines;
  } catch (err) {
    outcome.ok = false;
    outcome.error = classify(err, rec, active, msg.timeoutMs, msg.memoryMb);
    // A return value over a limit is the component's doing; anything else leaves the isolate suspect.
    if (!(err instanceof IsolateResultError && err.limit)) {
      active?.dispose();
      slots.delete(slotKey);
    }
  } finally {
    clearTimeout(timer);
    if (active) {
      // A disposed isolate reports no CPU time any more.
      outcome.cpuMs = Math.max(0, Number(active.cpuTimeNs() - cpuStart) / 1e6);
      active.endInvocation();
      if (active.disposed && slots.get(slotKey) === active) slots.delete(slotKey);
    }
    // A violation seen on the trusted side decides, whatever the isolate reported (it came first).
    if (rec.violation) {
      // A proposal no honest prelude makes: the isolate's built-ins cannot be trusted any more.
      if (rec.violation.code === "SANDBOX_CORRUPTED" && active) {
        active.dispose();
        if (slots.get(slotKey) === active) slots.delete(slotKey);
      }
      outcome.ok = false;
      outcome.error = rec.violation;
      delete outcome.returnValue;
      delete outcome.exports;
      delete outcome.exited;
    }
    // Emits, sends and db writes accepted before the run ended are kept, also when it failed.
    outcome.emits = rec.emits;
    if (rec.sends.length > 0) outcome.sends = rec.sends;
    if (rec.db.changed) {
      outcome.dbChanged = true;
      outcome.db = rec.db.snapshot();
    }
    outcome.droppedLogLines = droppedInIsolate + rec.hostDroppedLogs;
    outcome.wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  }
  return needBundle ? "need-bundle" : outcome;
}

async function runDescribe(msg: DescribeRequest): Promise<void> {
  if (!env) throw new Error("runner not initialised");
  const logs: LogLine[] = [];
  const rec = new InvocationRecord(
    msg.id,
    Date.now() + msg.timeoutMs,
    "{}",
    env.limits.maxDbBytes,
    (l) => logs.push(l),
    () => {},
  );
  const slot = new IsolateSlot(`describe:${msg.id}`, `describe:${msg.id}`, msg.memoryMb, env);
  slot.current = rec;
  const timer = setTimeout(() => {
    rec.timedOut = true;
    slot.dispose();
  }, msg.timeoutMs);
  try {
    const loaded = await slot.init(msg.bundle, true);
    if (loaded.ok && loaded.describe !== undefined)
      send({ type: "described", id: msg.id, result: { ok: true, describe: loaded.describe, logs } });
    else
      send({
        type: "described",
        id: msg.id,
        result: { ok: false, error: loaded.error ?? { name: "Error", message: "load failed", code: "LOAD_ERROR" }, logs },
      });
  } catch (err) {
    send({ type: "described", id: msg.id, result: { ok: false, error: classify(err, rec, slot, msg.timeoutMs, msg.memoryMb), logs } });
  } finally {
    clearTimeout(timer);
    slot.dispose();
  }
}

function enqueue(key: string, task: () => Promise<void>): void {
  const previous = queues.get(key) ?? Promise.resolve();
  const next = previous.then(task, task).catch((err: unknown) => {
    process.stderr.write(`headwater runner: ${String((err as Error | undefined)?.stack ?? err)}\n`);
  });
  queues.set(key, next);
  void next.finally(() => {
    if (queues.get(key) === next) queues.delete(key);
  });
}

function onMessage(raw: unknown): void {
  const msg = readHostMessage(raw);
  switch (msg.type) {
    case "init":
      env = { limits: msg.limits, allowPrivateNetworks: msg.allowPrivateNetworks, prelude: msg.prelude };
      maxWarm = msg.maxWarmIsolates;
      send({ type: "ready" });
      return;
    case "ping":
      send({ type: "pong", seq: msg.seq });
      return;
    case "invoke":
      if (msg.bundle !== undefined) rememberBundle(msg.bundleKey, msg.bundle);
      enqueue(`${msg.ownerId}\u0000${msg.sourceId}`, () => runInvocation(msg));
      return;
    case "invoke-batch":
      if (msg.bundle !== undefined) rememberBundle(msg.bundleKey, msg.bundle);
      enqueue(`${msg.ownerId}\u0000${msg.sourceId}`, () => runBatch(msg));
      return;
    case "describe":
      void runDescribe(msg).catch((err: unknown) =>
        process.stderr.write(`headwater runner: ${String((err as Error | undefined)?.stack ?? err)}\n`),
      );
      return;
    case "shutdown":
      for (const slot of slots.values()) slot.dispose();
      process.exit(0);
  }
}

process.on("message", (raw: unknown) => {
  try {
    onMessage(raw);
  } catch (err) {
    // A malformed message from the host: answer the invocation it names, if any, and go on.
    const id = err instanceof ProtocolError ? err.id : undefined;
    const message = `the runner process received a malformed message: ${String((err as Error)?.message ?? err).slice(0, 500)}`;
    process.stderr.write(`headwater runner: ${message}\n`);
    if (id !== undefined) {
      const error: InvocationError = { name: "SandboxProtocolError", code: "SANDBOX_PROTOCOL", message };
      const type = (raw as { type?: unknown } | null)?.type;
      if (type === "describe") send({ type: "described", id, result: { ok: false, error, logs: [] } });
      else
        send({
          type: "result",
          id,
          outcome: { ok: false, error, emits: [], dbChanged: false, droppedLogLines: 0, cpuMs: 0, wallMs: 0, warm: false },
        });
    }
  }
});

process.on("disconnect", () => process.exit(0));
