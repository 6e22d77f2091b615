// Entry of a runner child process (forked by the Runtime supervisor). It owns isolates: one warm
// context per (owner, source) in an isolate of that owner shared with the owner's other sources
// (one of them running at a time), bounds on the contexts (LRU) and on the isolates, and the
// per-invocation timeout and memory limit.
// Trusted code: it reads the isolate's proposals (isolateResults.ts) and decides the outcome.
import type { HttpResponse, InvocationError, LogLine, TmpEntry } from "../types.js";
import { IsolateResultError, readRunResult } from "./isolateResults.js";
import { IsolateSlot, InvocationRecord, sandboxFailedMessage, SharedIsolate, SyncSliceExceeded, type SlotEnv } from "./isolateSlot.js";
import { messagesOf, TurnBatchedSender } from "./turnBatch.js";
import {
  ProtocolError,
  readHostMessage,
  tmpFromWire,
  tmpToWire,
  type BatchItemResult,
  type DescribeRequest,
  type InvokeBatchRequest,
  type InvokeRequest,
  type WorkerOutcome,
  type WorkerResponse,
  type WorkerToHost,
} from "./protocol.js";

let env: SlotEnv | undefined;
let maxWarmIsolates = 256;
let maxWarmContexts = 1024;
/** Warm contexts by `owner\u0000source`, least recently used first. */
const slots = new Map<string, IsolateSlot>();
/** Live isolates (with their cold starts under way), least recently used first. */
const isolates = new Set<SharedIsolate>();
/** Contexts one isolate holds at most: they share its heap and its memory limit. */
const MAX_CONTEXTS_PER_ISOLATE = 64;
/**
 * How long a run waits for its warm context's isolate while another source of the owner runs in
 * it (a warm run costs a fraction of a cold start, and most runs take a few ms), before it starts
 * again in an idle isolate: a run that hangs or waits on the network holds its siblings no longer.
 */
const BUSY_ISOLATE_WAIT_MS = 50;
const queues = new Map<string, Promise<void>>();
const bundles = new Map<string, string>();
const MAX_BUNDLES = 256;
const pendingLogs = new Map<number, LogLine[]>();
let flushScheduled = false;

/** What this child sends in one turn goes to the host in one write (turnBatch.ts). */
const sender = new TurnBatchedSender<WorkerToHost>((message) => {
  try {
    process.send?.(message);
  } catch (err) {
    // Only a bug can get here (every part of a message is a string or a primitive field).
    process.stderr.write(`headwater runner: cannot send a ${message.type} message: ${String((err as Error)?.message ?? err)}\n`);
  }
});

function send(msg: WorkerToHost): void {
  sender.send(msg);
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

/** Marks a source's context and its isolate as just used; the least recently used idle ones go past the bounds. */
function touch(key: string, slot: IsolateSlot): void {
  slots.delete(key);
  slots.set(key, slot);
  touchIsolate(slot.shared);
  if (slots.size <= maxWarmContexts) return;
  for (const [k, s] of slots) {
    if (slots.size <= maxWarmContexts) break;
    if (s.current) continue;
    s.release();
    slots.delete(k);
  }
}

/** Marks an isolate as just used (a new one counts against the bound from its first cold start on). */
function touchIsolate(shared: SharedIsolate): void {
  isolates.delete(shared);
  isolates.add(shared);
}

/** Ends an isolate and forgets its contexts. */
function dropIsolate(shared: SharedIsolate): void {
  for (const slot of shared.slots) if (slots.get(slot.key) === slot) slots.delete(slot.key);
  shared.dispose();
  isolates.delete(shared);
}

type IsolateWanted = { readonly ownerId: string; readonly bundleKey: string; readonly memoryMb: number };

/** The isolates of the owner, component version and memory limit with room for another context. */
function isolatesOf(want: IsolateWanted): SharedIsolate[] {
  const found: SharedIsolate[] = [];
  for (const shared of isolates) {
    if (shared.disposed) {
      dropIsolate(shared);
      continue;
    }
    if (shared.ownerId !== want.ownerId || shared.bundleKey !== want.bundleKey || shared.memoryMb !== want.memoryMb) continue;
    if (shared.slots.size < MAX_CONTEXTS_PER_ISOLATE) found.push(shared);
  }
  return found;
}

/**
 * Waits, BUSY_ISOLATE_WAIT_MS at most, while every live isolate of `candidates()` is busy (none
 * left: at once). A disposed isolate is no candidate: its run may still be winding down.
 */
async function momentForIdle(candidates: () => readonly SharedIsolate[]): Promise<void> {
  const deadline = Date.now() + BUSY_ISOLATE_WAIT_MS;
  for (;;) {
    const live = candidates().filter((shared) => !shared.disposed);
    const left = deadline - Date.now();
    if (live.length === 0 || left <= 0 || live.some((shared) => !shared.busy)) return;
    await Promise.race(live.map((shared) => shared.idle(left)));
  }
}

/**
 * The isolate a cold source of `want.ownerId` starts its context in, to be taken at once: an idle
 * one of the same owner, component version and memory limit with room for another context (in
 * its count and in its heap), else
 * a new one (undefined; when the runner holds its most, idle isolates end first, those with the
 * fewest warm sources first). Never another owner's: a tenant's code never runs in a heap another tenant's code ran in.
 */
function isolateFor(want: IsolateWanted): SharedIsolate | undefined {
  const idle = isolatesOf(want).filter((shared) => !shared.busy && shared.roomy);
  if (idle.length > 0) return idle[idle.length - 1]; // the most recently used
  while (isolates.size >= maxWarmIsolates) {
    const victim = leastWarmIdleIsolate();
    if (!victim) break;
    dropIsolate(victim);
  }
  return undefined;
}

/**
 * The idle isolate whose end costs the fewest warm sources (the least recently used of those):
 * the contexts are bounded on their own (maxWarmContexts), so an isolate is chosen by what its
 * end throws away, not by its age alone.
 */
function leastWarmIdleIsolate(): SharedIsolate | undefined {
  let victim: SharedIsolate | undefined;
  for (const shared of isolates) {
    if (shared.busy) continue;
    if (!victim || shared.slots.size < victim.slots.size) victim = shared;
    if (victim.slots.size <= 1) break;
  }
  return victim;
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
  // The platform's own code in the isolate failed (PlatformFailure, or a call into the isolate that
  // failed for no reason of the component's): almost always built-ins the component replaced. An
  // unhandled rejection of the component's never gets here (IsolateSlot records it on the run).
  return { name: "SandboxError", code: "SANDBOX_FAILED", message: `${sandboxFailedMessage(message)}, so its isolate was discarded` };
}

/** Where one run's log lines and custom response go: straight to the host, or kept for a batch's one answer. */
interface RunSink {
  log(line: LogLine): void;
  respond(response: HttpResponse): void;
}

/** What one run needs (an invoke message, or one item of a batch with the db the previous item left). */
type RunInput = Pick<
  InvokeRequest,
  | "id"
  | "ownerId"
  | "sourceId"
  | "bundleKey"
  | "bundle"
  | "method"
  | "payload"
  | "db"
  | "timeoutMs"
  | "memoryMb"
  | "tmp"
  | "keepTmp"
  | "answerOnly"
>;

/** A workflow step's /tmp as the isolate takes it: bytes, not base64. */
type RunTmp = { entries: TmpEntry[]; keep: boolean } | undefined;

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

/**
 * How long a run's synchronous part may hold this thread when it enters its isolate here rather
 * than on isolated-vm's pool (IsolateSlot.invoke). A run past it is run again on the pool.
 */
const SYNC_SLICE_MS = 20;
/** Sources (slot keys) of a run that went past SYNC_SLICE_MS: theirs go to the pool directly. */
const poolOnly = new Set<string>();
const MAX_POOL_ONLY = 10_000;

async function execute(msg: RunInput, sink: RunSink): Promise<WorkerOutcome | "need-bundle"> {
  const started = process.hrtime.bigint();
  const slotKey = `${msg.ownerId}\u0000${msg.sourceId}`;
  const tmp: RunTmp =
    msg.tmp !== undefined || msg.keepTmp === true ? { entries: tmpFromWire(msg.tmp ?? []), keep: msg.keepTmp === true } : undefined;
  if (!poolOnly.has(slotKey)) {
    const outcome = await executeOnce(msg, sink, slotKey, started, true, tmp);
    if (outcome !== "again") return outcome;
    // It computed too long to hold this thread: run it again, from its start, where nothing waits on it.
    if (poolOnly.size >= MAX_POOL_ONLY) poolOnly.delete(poolOnly.values().next().value as string);
    poolOnly.add(slotKey);
  }
  const outcome = await executeOnce(msg, sink, slotKey, started, false, tmp);
  if (outcome === "again") throw new Error("a run on the pool was sent back to be run again");
  return outcome;
}

/**
 * Runs one invocation in its slot, within what is left of its time since `started`. With
 * `enterHere`, the run's synchronous part may execute on this thread; when it goes past
 * SYNC_SLICE_MS it is stopped, its context and everything it did so far discarded, and "again"
 * answered.
 */
async function executeOnce(
  msg: RunInput,
  sink: RunSink,
  slotKey: string,
  started: bigint,
  enterHere: boolean,
  tmp: RunTmp,
): Promise<WorkerOutcome | "need-bundle" | "again"> {
  if (!env) throw new Error("runner not initialised");
  const leftMs = (): number => msg.timeoutMs - Number(process.hrtime.bigint() - started) / 1e6;
  const rec = new InvocationRecord(
    msg.id,
    Date.now() + Math.max(0, leftMs()),
    msg.db,
    env.limits.maxDbBytes,
    (line) => sink.log(line),
    (response) => sink.respond(response),
    tmp?.keep === true,
    msg.answerOnly === true,
  );
  let slot = slots.get(slotKey);
  // Another source of the owner runs in this context's isolate: a warm run is worth a moment's wait.
  const waitedForSibling = slot !== undefined && !slot.disposed && slot.shared.busy;
  if (waitedForSibling && slot) {
    const { shared } = slot;
    await momentForIdle(() => [shared]);
  }
  // A new component version or memory limit starts clean; a context whose isolate ended, or still
  // runs another source of the owner, starts again in an idle isolate.
  if (slot && (slot.bundleKey !== msg.bundleKey || slot.memoryMb !== msg.memoryMb || slot.disposed || slot.shared.busy)) {
    slot.release();
    slots.delete(slotKey);
    slot = undefined;
  }
  const warm = slot !== undefined;
  let active: IsolateSlot | undefined = slot;
  // A timer may fire up to a millisecond before its delay has passed (it counts from the event loop's
  // cached clock); the run is stopped only once it has really had its whole time.
  const stopWhenDue = (): void => {
    const left = leftMs();
    if (left > 0) {
      timer = setTimeout(stopWhenDue, Math.ceil(left));
      return;
    }
    rec.timedOut = true;
    active?.dispose();
  };
  let timer = setTimeout(stopWhenDue, Math.max(0, Math.ceil(leftMs())));
  let cpuStart = 0n;
  let needBundle = false;
  let again = false;
  let droppedInIsolate = 0;
  const outcome: WorkerOutcome = { ok: false, emits: [], dbChanged: false, droppedLogLines: 0, cpuMs: 0, wallMs: 0, warm };
  try {
    if (!active) {
      const bundle = msg.bundle ?? bundles.get(msg.bundleKey);
      if (bundle === undefined) {
        needBundle = true;
        return "need-bundle";
      }
      // A moment's wait is spent once: a run that waited for its context's isolate does not wait again.
      if (!waitedForSibling) await momentForIdle(() => isolatesOf(msg));
      active = new IsolateSlot(slotKey, msg.bundleKey, msg.memoryMb, env, isolateFor(msg));
      active.current = rec;
      touchIsolate(active.shared);
      cpuStart = active.cpuTimeNs();
      const loaded = await active.init(bundle);
      if (!loaded.ok) {
        outcome.error = loaded.error ?? { name: "Error", message: "the component failed to load", code: "LOAD_ERROR" };
        // What failed to load is this context's: the owner's other contexts in the isolate go on.
        active.release();
        return outcome;
      }
      touch(slotKey, active);
    } else {
      active.current = rec;
      touch(slotKey, active);
      cpuStart = active.cpuTimeNs();
    }
    const left = leftMs();
    const proposed = await active.invoke(msg.payload, msg.db, enterHere && left > SYNC_SLICE_MS ? SYNC_SLICE_MS : undefined, tmp);
    await active.settleDispatches();
    const r = readRunResult(proposed, env.limits);
    outcome.ok = r.ok;
    if (r.error) outcome.error = r.error;
    if (r.returnValue !== undefined) outcome.returnValue = r.returnValue;
    if (r.exports !== undefined) outcome.exports = r.exports;
    if (r.exited) outcome.exited = r.exited;
    droppedInIsolate = r.droppedLogLines;
    // A rejection nobody handled fails the run (as it would crash Node), whatever the run did after
    // it; what it emitted is kept, and its isolate goes on (the platform's code did not fail).
    if (rec.rejection) {
      outcome.ok = false;
      outcome.error = rec.rejection;
      delete outcome.returnValue;
      delete outcome.exports;
      delete outcome.exited;
    }
  } catch (err) {
    if (err instanceof SyncSliceExceeded) {
      again = true;
      return "again";
    }
    outcome.ok = false;
    outcome.error = classify(err, rec, active, msg.timeoutMs, msg.memoryMb);
    // A return value over a limit is the component's doing; anything else leaves the isolate suspect.
    if (!(err instanceof IsolateResultError && err.limit)) {
      active?.dispose();
      slots.delete(slotKey);
    }
  } finally {
    clearTimeout(timer);
    if (again) {
      // Nothing of the stopped part is kept: the callbacks it queued find no invocation any more.
      active?.release();
      if (slots.get(slotKey) === active) slots.delete(slotKey);
    } else if (active) {
      // A disposed isolate reports no CPU time any more.
      outcome.cpuMs = Math.max(0, Number(active.cpuTimeNs() - cpuStart) / 1e6);
      active.endInvocation();
      if (active.disposed && slots.get(slotKey) === active) slots.delete(slotKey);
    }
    // A violation seen on the trusted side decides, whatever the isolate reported (it came first).
    if (!again && rec.violation) {
      // A proposal no honest prelude makes: the isolate's built-ins cannot be trusted any more.
      if ((rec.violation.code === "SANDBOX_CORRUPTED" || rec.violation.code === "SANDBOX_FAILED") && active) {
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
    if (rec.reachedOut) outcome.reachedOut = true;
    // Only a step that succeeded has a next step to hand its /tmp on to.
    if (outcome.ok && rec.tmp.length > 0) outcome.tmp = tmpToWire(rec.tmp);
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
      maxWarmIsolates = msg.maxWarmIsolates;
      maxWarmContexts = msg.maxWarmContexts;
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
      for (const shared of isolates) shared.dispose();
      process.exit(0);
  }
}

process.on("message", (raw: unknown) => {
  let messages: readonly unknown[];
  try {
    messages = messagesOf(raw);
  } catch (err) {
    process.stderr.write(`headwater runner: the runner process received a malformed message: ${String((err as Error)?.message ?? err)}\n`);
    return;
  }
  for (const message of messages) handleMessage(message);
});

/** One message from the host, alone or taken out of a `many`. */
function handleMessage(raw: unknown): void {
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
}

process.on("disconnect", () => process.exit(0));
