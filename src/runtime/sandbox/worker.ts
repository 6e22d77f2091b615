// Entry of a runner child process (forked by the Runtime supervisor). It owns isolates: one warm
// slot per (owner, source), an LRU over them, and the per-invocation timeout and memory limit.
import type { InvocationError, LogLine } from "../types.js";
import { IsolateSlot, InvocationRecord, type SlotEnv } from "./isolateSlot.js";
import type { DescribeRequest, HostToWorker, InvokeRequest, WorkerOutcome, WorkerToHost } from "./protocol.js";

let env: SlotEnv | undefined;
let maxWarm = 64;
const slots = new Map<string, IsolateSlot>();
const queues = new Map<string, Promise<void>>();
const bundles = new Map<string, string>();
const MAX_BUNDLES = 256;
const pendingLogs = new Map<number, LogLine[]>();
let flushScheduled = false;

function send(msg: WorkerToHost): void {
  process.send?.(msg);
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

function classify(err: unknown, rec: InvocationRecord, timeoutMs: number, memoryMb: number): InvocationError {
  const message = String((err as Error)?.message ?? err);
  if (rec.timedOut) {
    return { name: "TimeoutError", code: "TIMEOUT", message: `the invocation did not finish within ${timeoutMs} ms and was stopped` };
  }
  if (/memory limit/i.test(message)) {
    return { name: "MemoryLimitError", code: "MEMORY_LIMIT", message: `the invocation exceeded the memory limit of ${memoryMb} MB and was stopped` };
  }
  if (/disposed/i.test(message)) return { name: "SandboxError", code: "ISOLATE_DISPOSED", message: `the sandbox was stopped: ${message}` };
  // The platform's own code in the isolate failed: almost always built-ins the component replaced.
  return {
    name: "SandboxError",
    code: "SANDBOX_FAILED",
    message: `the sandbox failed outside the component's code (${message.slice(0, 500)}); built-ins may have been replaced by the component, so its isolate was discarded`,
  };
}

async function runInvocation(msg: InvokeRequest): Promise<void> {
  if (!env) throw new Error("runner not initialised");
  const started = process.hrtime.bigint();
  const slotKey = `${msg.ownerId}\u0000${msg.sourceId}`;
  const rec = new InvocationRecord(
    msg.id,
    Date.now() + msg.timeoutMs,
    (line) => queueLog(msg.id, line),
    (response) => send({ type: "respond", id: msg.id, response }),
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
  const outcome: WorkerOutcome = { ok: false, emits: [], dbChanged: false, droppedLogLines: 0, cpuMs: 0, wallMs: 0, warm };
  try {
    if (!active) {
      const bundle = msg.bundle ?? bundles.get(msg.bundleKey);
      if (bundle === undefined) {
        needBundle = true;
        send({ type: "need-bundle", id: msg.id });
        return;
      }
      active = new IsolateSlot(slotKey, msg.bundleKey, msg.memoryMb, env);
      active.current = rec;
      cpuStart = active.cpuTimeNs();
      const loaded = await active.init(bundle);
      if (!loaded.ok) {
        outcome.error = loaded.error ?? { name: "Error", message: "the component failed to load", code: "LOAD_ERROR" };
        active.dispose();
        return;
      }
      touch(slotKey, active);
    } else {
      touch(slotKey, active);
      active.current = rec;
      cpuStart = active.cpuTimeNs();
    }
    const json = await active.invoke(msg.payload);
    const r = JSON.parse(json) as Partial<WorkerOutcome> & { ok: boolean };
    outcome.ok = r.ok;
    if (r.error) outcome.error = r.error;
    outcome.dbChanged = r.dbChanged === true;
    if (r.db) outcome.db = r.db;
    if (r.returnValue !== undefined) outcome.returnValue = r.returnValue;
    if (r.exports) outcome.exports = r.exports;
    if (r.exited) outcome.exited = r.exited;
    outcome.droppedLogLines = r.droppedLogLines ?? 0;
    if (rec.violation) {
      outcome.ok = false;
      outcome.error = { name: "SandboxError", code: "LIMIT_EXCEEDED", message: rec.violation };
    }
  } catch (err) {
    outcome.ok = false;
    outcome.error = classify(err, rec, msg.timeoutMs, msg.memoryMb);
    active?.dispose();
    slots.delete(slotKey);
  } finally {
    clearTimeout(timer);
    if (active) {
      outcome.cpuMs = Number(active.cpuTimeNs() - cpuStart) / 1e6;
      active.endInvocation();
      if (active.disposed && slots.get(slotKey) === active) slots.delete(slotKey);
    }
    outcome.emits = rec.emits;
    outcome.droppedLogLines += rec.hostDroppedLogs;
    outcome.wallMs = Number(process.hrtime.bigint() - started) / 1e6;
    flushLogsOf(msg.id);
    if (!needBundle) send({ type: "result", id: msg.id, outcome });
  }
}

async function runDescribe(msg: DescribeRequest): Promise<void> {
  if (!env) throw new Error("runner not initialised");
  const logs: LogLine[] = [];
  const rec = new InvocationRecord(msg.id, Date.now() + msg.timeoutMs, (l) => logs.push(l), () => {});
  const slot = new IsolateSlot(`describe:${msg.id}`, `describe:${msg.id}`, msg.memoryMb, env);
  slot.current = rec;
  const timer = setTimeout(() => {
    rec.timedOut = true;
    slot.dispose();
  }, msg.timeoutMs);
  try {
    const loaded = await slot.init(msg.bundle);
    if (loaded.ok) send({ type: "described", id: msg.id, result: { ok: true, describe: loaded.describe, logs } });
    else send({ type: "described", id: msg.id, result: { ok: false, error: loaded.error ?? { name: "Error", message: "load failed", code: "LOAD_ERROR" }, logs } });
  } catch (err) {
    send({ type: "described", id: msg.id, result: { ok: false, error: classify(err, rec, msg.timeoutMs, msg.memoryMb), logs } });
  } finally {
    clearTimeout(timer);
    slot.dispose();
  }
}

function enqueue(key: string, task: () => Promise<void>): void {
  const previous = queues.get(key) ?? Promise.resolve();
  const next = previous.then(task, task).catch((err) => {
    process.stderr.write(`headwater runner: ${String(err?.stack ?? err)}\n`);
  });
  queues.set(key, next);
  void next.finally(() => {
    if (queues.get(key) === next) queues.delete(key);
  });
}

process.on("message", (raw: HostToWorker) => {
  switch (raw.type) {
    case "init":
      env = { limits: raw.limits, allowPrivateNetworks: raw.allowPrivateNetworks, prelude: raw.prelude };
      maxWarm = raw.maxWarmIsolates;
      send({ type: "ready" });
      return;
    case "ping":
      send({ type: "pong", seq: raw.seq });
      return;
    case "invoke":
      if (raw.bundle !== undefined) rememberBundle(raw.bundleKey, raw.bundle);
      enqueue(`${raw.ownerId}\u0000${raw.sourceId}`, () => runInvocation(raw));
      return;
    case "describe":
      void runDescribe(raw).catch((err) => process.stderr.write(`headwater runner: ${String(err?.stack ?? err)}\n`));
      return;
    case "shutdown":
      for (const slot of slots.values()) slot.dispose();
      process.exit(0);
  }
});

process.on("disconnect", () => process.exit(0));
