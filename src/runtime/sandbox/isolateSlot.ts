// A source's warm state in a runner child: its context in an isolate of its owner (shared with the
// contexts of the owner's other sources, see SharedIsolate), the host side of its bridge, and the
// bookkeeping of the invocation it is serving. A slot is warm state for exactly one source.
// This is trusted code the isolate cannot reach: it decides on every emit, db.set, respond and
// log line the isolate proposes, and enforces the limits whatever the isolate's own checks did.
import ivm from "isolated-vm";
import { jsonDepth, MAX_JSON_DEPTH, parseJson } from "../../json/bounded.js";
import { outboundRequest, OutboundError } from "../../net/outbound.js";
import type { SandboxLimits } from "../config.js";
import {
  checkHeaders,
  checkMeta,
  checkStatus,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_ERROR_NAME_CHARS,
  MAX_ERROR_STACK_CHARS,
  MAX_HEADER_VALUE_BYTES,
  MAX_RESPONSE_HEADERS,
  MAX_SEND_BYTES,
  MAX_SENDS_PER_RUN,
  MAX_TMP_ENTRIES,
  normalizeSend,
  TMP_MAX_BYTES,
} from "../rules.js";
import type { HttpResponse, InvocationError, LogLine, TmpEntry } from "../types.js";
import { hostOperation } from "./hostOperations.js";
import { IsolateCallGate, type IsolatePass } from "./isolateGate.js";
import { readLoadResult, type IsolateLoadResult } from "./isolateResults.js";
import { isCarriedTmpPath, type WorkerEmit } from "./protocol.js";
import { TrustedDb, type DbRefusal } from "./trustedDb.js";

export interface SlotEnv {
  limits: SandboxLimits;
  allowPrivateNetworks: boolean;
  prelude: string;
}

/** What the trusted side collects while one invocation runs. */
export class InvocationRecord {
  emits: WorkerEmit[] = [];
  /** Accepted $.send.* destinations, normalized, as JSON text. */
  sends: string[] = [];
  logLines = 0;
  logBytes = 0;
  hostDroppedLogs = 0;
  response: HttpResponse | undefined;
  /** The first limit or protocol violation: the run fails with it, whatever the isolate reports. */
  violation: InvocationError | undefined;
  /**
   * The first promise rejection of the component's that nothing handled: the run goes on to its
   * end (its isolate is not discarded) and then fails with it (see IsolateSlot.invoke).
   */
  rejection: InvocationError | undefined;
  timedOut = false;
  /** A workflow step with a later step: the /tmp entries the isolate handed on at the run's end. */
  readonly tmp: TmpEntry[] = [];
  tmpBytes = 0;
  readonly tmpPaths = new Set<string>();
  /** An answer-only run (Invocation.answerOnly) tried an outbound request: it was refused. */
  reachedOut = false;
  readonly db: TrustedDb;
  constructor(
    readonly id: number,
    readonly deadline: number,
    dbJson: string,
    maxDbBytes: number,
    readonly onLog: (line: LogLine) => void,
    readonly onRespond: (response: HttpResponse) => void,
    /** The run was asked to hand its /tmp on (the host's keepTmp). */
    readonly keepTmp = false,
    /** The run may only answer (Invocation.answerOnly): no outbound requests. */
    readonly answerOnly = false,
  ) {
    this.db = new TrustedDb(dbJson, maxDbBytes);
  }

  violate(code: "LIMIT_EXCEEDED" | "SANDBOX_CORRUPTED" | "SANDBOX_FAILED", message: string): void {
    this.violation ??=
      code === "LIMIT_EXCEEDED"
        ? { name: "LimitExceededError", code, message }
        : { name: "SandboxError", code, message: `${message}; its isolate was discarded` };
  }
}

const RESPONSE_KINDS = new Set(["empty", "text", "json", "bytes"]);

/** The platform's own code in the isolate failed: almost always built-ins the component replaced. */
export function sandboxFailedMessage(message: string): string {
  return `the sandbox failed outside the component's code (${message.slice(0, 500)}); built-ins may have been replaced by the component`;
}

/** What the isolate's invocation promise settles with when the platform's code of the run failed (invoke.ts). */
export class PlatformFailure extends Error {}

/**
 * The component's error for an unhandled rejection, from what isolated-vm copied out of the
 * isolate: an Error (name, message and stack as text) or the rejected value itself.
 */
function rejectionError(reason: unknown): InvocationError {
  const prefix = "Unhandled promise rejection: ";
  if (reason instanceof Error) {
    const name = typeof reason.name === "string" && reason.name !== "" ? reason.name : "Error";
    const message = typeof reason.message === "string" ? reason.message : "";
    // isolated-vm appends the host's side of the call to the stack; that part is not the component's.
    let stack = typeof reason.stack === "string" ? reason.stack : undefined;
    const boundary = stack?.indexOf("\n    at (<isolated-vm boundary>)") ?? -1;
    if (stack !== undefined && boundary >= 0) stack = stack.slice(0, boundary);
    return {
      name: name.slice(0, MAX_ERROR_NAME_CHARS),
      message: (prefix + message).slice(0, MAX_ERROR_MESSAGE_CHARS),
      ...(stack ? { stack: stack.slice(0, MAX_ERROR_STACK_CHARS) } : {}),
      code: "USER_ERROR",
    };
  }
  let shown: string;
  try {
    shown = typeof reason === "string" ? JSON.stringify(reason) : (JSON.stringify(reason) ?? String(reason));
  } catch {
    shown = String(reason);
  }
  return { name: "Error", message: `${prefix}non-error rejection: ${shown}`.slice(0, MAX_ERROR_MESSAGE_CHARS), code: "USER_ERROR" };
}

let preludeCache: ivm.ExternalCopy<ArrayBuffer> | undefined;
const bundleCache = new Map<string, ivm.ExternalCopy<ArrayBuffer>>();
const MAX_CODE_CACHE = 256;

function producedCache(script: ivm.Script): ivm.ExternalCopy<ArrayBuffer> | undefined {
  return (script as unknown as { cachedData?: ivm.ExternalCopy<ArrayBuffer> }).cachedData;
}

/**
 * The prelude and the bundle compiled in one isolate. A script is bound to its isolate, not to a
 * context: each context of the isolate (same owner, same bundle) runs them without compiling them
 * again, which was about a third of a cold start's setup.
 */
interface CompiledScripts {
  prelude?: ivm.Script;
  bundle?: ivm.Script;
}

/** Every async call into an isolate of this process goes through it (see isolateGate.ts). */
const isolateCalls = new IsolateCallGate();

/** Why a flush is never answered: its context or isolate ended first. */
const STOPPED_BEFORE_CALLBACKS = "the sandbox was stopped before its callbacks arrived";

/** What isolated-vm throws when a synchronous call runs past its `timeout`. */
const SYNC_TIMEOUT_MESSAGE = "Script execution timed out.";

/** A run's synchronous part took longer than a call on the runner's own thread may (see IsolateSlot.invoke). */
export class SyncSliceExceeded extends Error {
  constructor(readonly sliceMs: number) {
    super(`the run computed for over ${sliceMs} ms without awaiting`);
  }
}

const LEVELS = new Set(["log", "info", "warn", "error", "debug"]);
const MAX_TIMERS = 10_000;

/**
 * One isolate of one owner, component version and memory limit, holding the warm contexts of
 * several of that owner's sources (a context per source: separate globals, module state and
 * bridge; only the compiled scripts and the heap are shared). One of its sources runs at a time:
 * a source whose isolate is busy with a sibling waits a moment (idle()), then starts in another
 * isolate, so a run that hangs or blows the heap holds or takes down only idle contexts of the
 * same owner, never a run.
 */
export class SharedIsolate {
  readonly isolate: ivm.Isolate;
  /** What is already compiled in this isolate (a script is bound to its isolate, not to a context). */
  readonly compiled: CompiledScripts = {};
  /** The contexts living in it. */
  readonly slots = new Set<IsolateSlot>();
  disposed = false;
  /** Runs of its contexts waiting for the one running now to end (see idle()). */
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly ownerId: string,
    readonly bundleKey: string,
    readonly memoryMb: number,
  ) {
    this.isolate = new ivm.Isolate({
      memoryLimit: memoryMb,
      onCatastrophicError: (message) => {
        // V8 lost control of the isolate: the process cannot be trusted any more.
        process.stderr.write(`headwater runner: catastrophic isolate error: ${message}\n`);
        process.abort();
      },
    });
  }

  /**
   * Whether another source's context may join: its contexts share the heap and its limit, so an
   * isolate whose heap is already half used (a source keeping large globals) takes no more, and a
   * new source starts in an isolate of its own instead of inheriting the pressure.
   */
  get roomy(): boolean {
    try {
      const heap = this.isolate.getHeapStatisticsSync();
      return heap.used_heap_size + heap.externally_allocated_size < (this.memoryMb * 1024 * 1024) / 2;
    } catch {
      return false; // disposed meanwhile
    }
  }

  /** One of its contexts is running an invocation (or loading). */
  get busy(): boolean {
    for (const slot of this.slots) if (slot.current) return true;
    return false;
  }

  /**
   * Nothing executes in it but `caller`'s run, nor may start to on its own: no other context runs
   * an invocation, and no context has a call of a timer or an HTTP answer under way. Only then
   * may this thread enter it synchronously, which would otherwise wait for the isolate with the
   * event loop stopped.
   */
  quietBut(caller: IsolateSlot): boolean {
    for (const slot of this.slots) if ((slot !== caller && slot.current) || slot.dispatchesUnderWay) return false;
    return !this.disposed;
  }

  /**
   * Resolves once none of its contexts runs, once it is disposed, or after `ms`, whichever comes
   * first. Every waiter is woken; the first to take the isolate (synchronously on waking) has it,
   * so the others check `busy` again.
   */
  idle(ms: number): Promise<void> {
    if (!this.busy || this.disposed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  /** A context ended its invocation: the waiting runs may go. */
  wakeWaiters(): void {
    if (this.busy) return;
    for (const wake of [...this.waiters]) wake();
  }

  /** Ends the isolate and so every context in it (a timeout, the memory limit, a suspect isolate, eviction). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const wake of [...this.waiters]) wake();
    for (const slot of this.slots) {
      slot.stopTimers();
      slot.failFlushes();
    }
    try {
      this.isolate.dispose();
    } catch {
      /* already disposed by V8 (memory limit) */
    }
  }
}

/** The owner part of a slot key (`owner\u0000source`). */
const ownerOfKey = (key: string): string => key.slice(0, Math.max(0, key.indexOf("\u0000")));

export class IsolateSlot {
  readonly shared: SharedIsolate;
  context: ivm.Context | undefined;
  private invokeRef: ivm.Reference<(payload: string, db: string, runId: number, tmp: unknown) => Promise<unknown>> | undefined;
  private awaitRunRef: ivm.Reference<(runId: number) => Promise<unknown> | undefined> | undefined;
  private dispatchRef: ivm.Reference<(kind: string, id: number, payload: unknown) => string | undefined> | undefined;
  private flushRef: ivm.Reference<() => void> | undefined;
  /** Calls of flush() waiting for their answer, oldest first (see invoke). */
  private readonly flushes: { resolve(): void; reject(err: Error): void }[] = [];
  private loadRef: ivm.Reference<(describe: boolean) => string> | undefined;
  current: InvocationRecord | undefined;
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private httpActive = 0;
  private readonly httpWaiting: (() => void)[] = [];
  private readonly dispatching = new Set<Promise<unknown>>();
  /** The pass of the invocation's call while it is open: released when the run awaits the host. */
  private running: IsolatePass | undefined;
  private released = false;
  lastUsed = Date.now();

  constructor(
    readonly key: string,
    readonly bundleKey: string,
    readonly memoryMb: number,
    private readonly env: SlotEnv,
    /** The isolate of the owner's other sources this context joins; a new isolate otherwise. */
    shared?: SharedIsolate,
  ) {
    if (
      shared &&
      (shared.disposed || shared.bundleKey !== bundleKey || shared.memoryMb !== memoryMb || shared.ownerId !== ownerOfKey(key))
    ) {
      throw new Error("a context joins only a live isolate of its own owner, component version and memory limit");
    }
    this.shared = shared ?? new SharedIsolate(ownerOfKey(key), bundleKey, memoryMb);
    this.shared.slots.add(this);
  }

  get isolate(): ivm.Isolate {
    return this.shared.isolate;
  }

  /** Gone: its context was released, or its isolate ended. */
  get disposed(): boolean {
    return this.released || this.shared.disposed;
  }

  /**
   * Releases this context alone (its globals, module state and bridge); the isolate's other
   * contexts go on. The isolate ends with its last context.
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.stopTimers();
    this.current = undefined;
    this.shared.slots.delete(this);
    this.shared.wakeWaiters();
    if (this.shared.disposed) return;
    this.failFlushes();
    for (const ref of [this.invokeRef, this.awaitRunRef, this.dispatchRef, this.loadRef, this.flushRef]) ref?.release();
    this.invokeRef = this.awaitRunRef = this.dispatchRef = this.loadRef = this.flushRef = undefined;
    this.context?.release();
    this.context = undefined;
    if (this.shared.slots.size === 0) this.shared.dispose();
  }

  /** Calls of timers or HTTP answers into its context not settled yet. */
  get dispatchesUnderWay(): boolean {
    return this.dispatching.size > 0;
  }

  /** Its flushes will never be answered (the context or its isolate ended). */
  failFlushes(): void {
    for (const waiter of this.flushes.splice(0)) waiter.reject(new Error(STOPPED_BEFORE_CALLBACKS));
  }

  stopTimers(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  /**
   * Sets up the context, runs the prelude and the bundle, and loads the component (describing it
   * when `describe`). Throws IsolateResultError when the isolate's answer cannot be accepted.
   */
  async init(bundle: string, describe = false): Promise<IsolateLoadResult> {
    const context = await isolateCalls.enter(() => this.isolate.createContext());
    this.context = context;
    const g = context.global;
    g.setSync("__hw_bridge_log", new ivm.Callback((level: unknown, message: unknown) => this.onLog(level, message), { ignored: true }));
    g.setSync(
      "__hw_bridge_emit",
      new ivm.Callback(
        (event: unknown, id: unknown, name: unknown, summary: unknown, ts: unknown) => this.onEmit(event, id, name, summary, ts),
        { ignored: true },
      ),
    );
    g.setSync(
      "__hw_bridge_respond",
      new ivm.Callback((status: unknown, headers: unknown, kind: unknown, body: unknown) => this.onRespond(status, headers, kind, body), {
        ignored: true,
      }),
    );
    g.setSync("__hw_bridge_send", new ivm.Callback((json: unknown) => this.onSend(json), { ignored: true }));
    g.setSync("__hw_bridge_db", new ivm.Callback((key: unknown, json: unknown) => this.onDbSet(key, json), { sync: true }));
    g.setSync("__hw_bridge_http", new ivm.Callback((id: unknown, req: unknown) => this.onHttp(id, req), { ignored: true }));
    g.setSync(
      "__hw_bridge_timer",
      new ivm.Callback((op: unknown, id: unknown, ms: unknown) => this.onTimer(op, id, ms), { ignored: true }),
    );
    g.setSync("__hw_bridge_sync", new ivm.Callback((op: unknown, args: unknown) => hostOperation(op, args), { sync: true }));
    g.setSync("__hw_bridge_flushed", new ivm.Callback(() => this.flushes.shift()?.resolve(), { ignored: true }));
    g.setSync(
      "__hw_bridge_tmp",
      new ivm.Callback(
        (path: unknown, kind: unknown, data: unknown, mtimeMs: unknown, birthtimeMs: unknown) =>
          this.onTmp(path, kind, data, mtimeMs, birthtimeMs),
        { ignored: true },
      ),
    );
    const prelude = (this.shared.compiled.prelude ??= this.compilePrelude());
    prelude.runSync(context);
    const entry = g.getSync("__hw_entry", { reference: true }) as ivm.Reference<Record<string, unknown>>;
    this.loadRef = entry.getSync("load", { reference: true }) as ivm.Reference<(describe: boolean) => string>;
    this.invokeRef = entry.getSync("invoke", { reference: true }) as ivm.Reference<
      (payload: string, db: string, runId: number, tmp: unknown) => Promise<unknown>
    >;
    this.awaitRunRef = entry.getSync("awaitRun", { reference: true }) as ivm.Reference<(runId: number) => Promise<unknown> | undefined>;
    this.dispatchRef = entry.getSync("dispatch", { reference: true }) as ivm.Reference<
      (k: string, i: number, p: unknown) => string | undefined
    >;
    this.flushRef = entry.getSync("flush", { reference: true }) as ivm.Reference<() => void>;
    entry.release();
    g.deleteSync("__hw_entry");
    const script = (this.shared.compiled.bundle ??= await this.compileBundle(bundle));
    await isolateCalls.enter(() => script.run(context));
    const load = this.loadRef;
    let loaded: unknown;
    try {
      loaded = await isolateCalls.enter(() => load.apply(undefined, [describe], { arguments: { copy: true }, result: { copy: true } }));
    } catch (err) {
      if (this.disposed || this.isolate.isDisposed) throw err;
      // load catches whatever the module's code throws: the call failed on a rejection of the
      // module's that nothing handled (see runEnd). The component failed to load.
      return { ok: false, error: { ...rejectionError(err), code: "LOAD_ERROR" } };
    }
    return readLoadResult(loaded, describe);
  }

  private compilePrelude(): ivm.Script {
    const prelude = this.isolate.compileScriptSync(this.env.prelude, {
      filename: "headwater:prelude.js",
      ...(preludeCache ? { cachedData: preludeCache } : { produceCachedData: true }),
    });
    const preludeData = producedCache(prelude);
    if (!preludeCache && preludeData) preludeCache = preludeData;
    return prelude;
  }

  private async compileBundle(bundle: string): Promise<ivm.Script> {
    const cached = bundleCache.get(this.bundleKey);
    const script = await isolateCalls.enter(() =>
      this.isolate.compileScript(bundle, {
        filename: "component.js",
        ...(cached ? { cachedData: cached } : { produceCachedData: true }),
      }),
    );
    const produced = producedCache(script);
    if (!cached && produced) {
      if (bundleCache.size >= MAX_CODE_CACHE) bundleCache.delete(bundleCache.keys().next().value as string);
      bundleCache.set(this.bundleKey, produced);
    }
    return script;
  }

  /**
   * Runs one invocation; the answer is the isolate's proposal, read with readRunResult.
   *
   * With `syncSliceMs`, and when nothing else executes in the isolate, the call enters the isolate
   * on this thread: the run's synchronous part (all of a run that awaits nothing of the host)
   * executes right here, for a tenth of the CPU of a call on isolated-vm's pool, which hands the
   * call to a pool thread and its answer back (bench/results/run-path.md). What the run awaits
   * afterwards continues on the pool as before. The synchronous part may take at most
   * `syncSliceMs`, since it holds this thread's event loop: beyond that it is stopped and
   * SyncSliceExceeded thrown; the caller discards the context and runs the invocation again on
   * the pool, where nothing waits on it. The callbacks it made (emits, logs, the response)
   * arrive after the answer of a call made on this thread, so the answer waits for a flush that
   * arrives behind them.
   *
   * `tmp`: a workflow step's /tmp (the previous step's files, whether to hand this run's on);
   * copied into the isolate as bytes.
   */
  async invoke(payload: string, db: string, syncSliceMs?: number, tmp?: { entries: TmpEntry[]; keep: boolean }): Promise<unknown> {
    const ref = this.invokeRef;
    const runId = this.current?.id;
    if (!ref || runId === undefined) throw new Error("slot not initialised");
    if (syncSliceMs !== undefined && this.shared.quietBut(this)) {
      let answer: Promise<unknown> | undefined;
      try {
        answer = ref.applySync(undefined, [payload, db, runId, tmp], {
          arguments: { copy: true },
          result: { promise: true, copy: true },
          timeout: syncSliceMs,
        });
      } catch (err) {
        if (!this.shared.disposed && err instanceof Error && err.message === SYNC_TIMEOUT_MESSAGE) throw new SyncSliceExceeded(syncSliceMs);
        // The run's synchronous part left a rejection nobody handled: its end is awaited on the pool.
        this.noteRejection(err);
      }
      const proposal = await this.runEnd(runId, answer);
      await this.flush();
      return proposal;
    }
    return this.runEnd(
      runId,
      this.onPool(() =>
        ref.apply(undefined, [payload, db, runId, tmp], { arguments: { copy: true }, result: { promise: true, copy: true } }),
      ),
    );
  }

  /** A call into the isolate on isolated-vm's pool, holding the run's pass until the run awaits the host. */
  private onPool(call: () => Promise<unknown>): Promise<unknown> {
    return isolateCalls.enter(async (pass) => {
      this.running = pass;
      try {
        return await call();
      } finally {
        this.running = undefined;
      }
    });
  }

  /**
   * The proposal the run's promise settles with. The isolate's invocation promise never rejects
   * (invoke.ts): a call into the isolate fails only when it was stopped, or when isolated-vm
   * reports a rejection nobody handled in the turn the call ran. Such a rejection is the
   * component's (the platform's own code leaves none): it is recorded, and the run's end is awaited
   * again through awaitRun. The platform's own failure arrives as a PlatformFailure.
   */
  private async runEnd(runId: number, first: Promise<unknown> | undefined): Promise<unknown> {
    let call = first;
    for (;;) {
      let answer: unknown;
      try {
        if (call === undefined) {
          const awaitRun = this.awaitRunRef;
          if (!awaitRun) throw new Error("slot not initialised");
          call = this.onPool(() =>
            awaitRun.apply(undefined, [runId], { arguments: { copy: true }, result: { promise: true, copy: true } }),
          );
        }
        answer = await call;
      } catch (err) {
        this.noteRejection(err);
        call = undefined;
        continue;
      }
      if (typeof answer === "string") return answer;
      const failure = typeof answer === "object" && answer !== null ? (answer as { platformFailure?: unknown }).platformFailure : undefined;
      if (typeof failure === "string") throw new PlatformFailure(failure);
      // No run under way in the isolate (awaitRun found none) or a malformed answer: readRunResult refuses it.
      return answer;
    }
  }

  /**
   * Records an unhandled rejection isolated-vm reported by failing a call into the context; throws
   * `err` again when the call failed because the isolate was stopped.
   */
  private noteRejection(err: unknown): void {
    if (this.disposed || this.isolate.isDisposed) throw err;
    const rec = this.current;
    if (!rec || rec.rejection) return;
    rec.rejection = rejectionError(err);
    this.onLog("error", rec.rejection.stack ?? `${rec.rejection.name}: ${rec.rejection.message}`);
  }

  /** Resolves once every callback the context made before now has been handled here. */
  private flush(): Promise<void> {
    const ref = this.flushRef;
    if (!ref || this.disposed) return Promise.reject(new Error(STOPPED_BEFORE_CALLBACKS));
    return new Promise<void>((resolve, reject) => {
      this.flushes.push({ resolve, reject });
      try {
        ref.applySync(undefined, []);
      } catch (err) {
        this.flushes.pop();
        reject(err);
      }
    });
  }

  cpuTimeNs(): bigint {
    try {
      return this.isolate.cpuTime;
    } catch {
      return 0n;
    }
  }

  /** Ends the bookkeeping of the current invocation: timers stop, late HTTP answers are dropped. */
  endInvocation(): void {
    this.stopTimers();
    this.current = undefined;
    this.lastUsed = Date.now();
    this.shared.wakeWaiters();
  }

  /** Ends its isolate, and so the owner's other contexts in it (after a timeout, the memory limit, or a suspect answer). */
  dispose(): void {
    this.shared.dispose();
  }

  private dispatch(kind: "timer" | "http", id: number, payload: unknown): void {
    const ref = this.dispatchRef;
    if (this.disposed || !ref) return;
    const applied = isolateCalls
      .enter(() => ref.apply(undefined, [kind, id, payload], { arguments: { copy: true }, result: { copy: true } }))
      .then(
        (failed) => {
          // The platform's code of the dispatch threw (it catches the component's own errors): the
          // run cannot go on, and the isolate's built-ins cannot be trusted any more.
          if (typeof failed !== "string") return;
          this.current?.violate("SANDBOX_FAILED", sandboxFailedMessage(failed));
          this.dispose();
        },
        (err: unknown) => {
          try {
            this.noteRejection(err);
          } catch {
            /* the isolate went away meanwhile */
          }
        },
      );
    this.dispatching.add(applied);
    void applied.finally(() => this.dispatching.delete(applied));
  }

  /**
   * Waits for the calls into the isolate still under way (timers, HTTP answers). The callbacks a
   * dispatch's code makes (emits, logs) reach this thread in order with that dispatch, not with
   * the invocation's result, which can arrive first: a run ends only after them.
   */
  async settleDispatches(): Promise<void> {
    // Bounded: after the run, the isolate's timers are cleared and no answer is dispatched any more.
    for (let round = 0; round < 3 && this.dispatching.size > 0; round++) await Promise.all([...this.dispatching]);
  }

  private onLog(level: unknown, message: unknown): void {
    const rec = this.current;
    if (!rec || typeof message !== "string") return;
    const { maxLogLines, maxLogBytes, maxLogLineChars } = this.env.limits;
    // The isolate applies these budgets too; this is where they are enforced.
    if (rec.logLines >= maxLogLines || rec.logBytes + Math.min(message.length, maxLogLineChars) > maxLogBytes + maxLogLineChars) {
      rec.hostDroppedLogs++;
      return;
    }
    const line: LogLine = {
      ts: Date.now(),
      level: (LEVELS.has(level as string) ? level : "log") as LogLine["level"],
      message: message.slice(0, maxLogLineChars + 64),
    };
    rec.logLines++;
    rec.logBytes += line.message.length;
    rec.onLog(line);
  }

  private onEmit(eventJson: unknown, id: unknown, name: unknown, summary: unknown, ts: unknown): void {
    const rec = this.current;
    // After a violation the run has failed: later emits are not kept.
    if (!rec || rec.violation) return;
    const { maxEmitBytes, maxEmitsPerRun } = this.env.limits;
    if (rec.emits.length >= maxEmitsPerRun) {
      rec.violate(
        "LIMIT_EXCEEDED",
        `$emit: more than ${maxEmitsPerRun} events were emitted; the limit is ${maxEmitsPerRun} per invocation`,
      );
      return;
    }
    if (typeof eventJson !== "string") {
      rec.violate("SANDBOX_CORRUPTED", "$emit: the event did not arrive as JSON text; built-ins may have been replaced by the component");
      return;
    }
    const bytes = eventJson.length * 3 > maxEmitBytes ? Buffer.byteLength(eventJson) : eventJson.length;
    if (bytes > maxEmitBytes) {
      rec.violate("LIMIT_EXCEEDED", `$emit: an event is ${bytes} bytes of JSON, over the limit of ${maxEmitBytes} bytes per event`);
      return;
    }
    if (jsonDepth(eventJson, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      rec.violate("LIMIT_EXCEEDED", `$emit: an event is nested deeper than ${MAX_JSON_DEPTH} levels`);
      return;
    }
    try {
      JSON.parse(eventJson);
    } catch {
      rec.violate("SANDBOX_CORRUPTED", "$emit: the event is not valid JSON text; built-ins may have been replaced by the component");
      return;
    }
    const meta = checkMeta(id, name, summary, ts);
    if (!meta.ok) {
      rec.violate("LIMIT_EXCEEDED", meta.message);
      return;
    }
    rec.emits.push({ event: eventJson, meta: meta.value });
  }

  private onSend(json: unknown): void {
    const rec = this.current;
    // After a violation the run has failed: later sends are not kept.
    if (!rec || rec.violation) return;
    if (rec.sends.length >= MAX_SENDS_PER_RUN) {
      rec.violate("LIMIT_EXCEEDED", `$.send: more than ${MAX_SENDS_PER_RUN} sends were made; the limit is ${MAX_SENDS_PER_RUN} per run`);
      return;
    }
    if (typeof json !== "string") {
      rec.violate(
        "SANDBOX_CORRUPTED",
        "$.send: the destination did not arrive as JSON text; built-ins may have been replaced by the component",
      );
      return;
    }
    const bytes = json.length * 3 > MAX_SEND_BYTES ? Buffer.byteLength(json) : json.length;
    if (bytes > MAX_SEND_BYTES) {
      rec.violate("LIMIT_EXCEEDED", `$.send: a send is ${bytes} bytes of JSON, over the limit of ${MAX_SEND_BYTES} bytes`);
      return;
    }
    if (jsonDepth(json, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      rec.violate("LIMIT_EXCEEDED", `$.send: a send is nested deeper than ${MAX_JSON_DEPTH} levels`);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      rec.violate("SANDBOX_CORRUPTED", "$.send: the destination is not valid JSON text; built-ins may have been replaced by the component");
      return;
    }
    const kind = typeof value === "object" && value !== null ? (value as Record<string, unknown>)["kind"] : undefined;
    const checked = normalizeSend(kind, value);
    // The isolate checked the same rules before sending: a refusal here is a forged proposal.
    if (!checked.ok) {
      rec.violate("SANDBOX_CORRUPTED", `${checked.message}; built-ins may have been replaced by the component`);
      return;
    }
    rec.sends.push(JSON.stringify(checked.value));
  }

  /** One /tmp entry the isolate hands on at the end of a workflow step; the store's bound is enforced again here. */
  private onTmp(path: unknown, kind: unknown, data: unknown, mtimeMs: unknown, birthtimeMs: unknown): void {
    const rec = this.current;
    if (!rec || rec.violation) return;
    const corrupted = (what: string) =>
      rec.violate("SANDBOX_CORRUPTED", `/tmp: ${what}; built-ins may have been replaced by the component`);
    if (!rec.keepTmp) return corrupted("files were handed on by a run that was not asked for them");
    if (
      typeof path !== "string" ||
      !isCarriedTmpPath(path) ||
      (kind !== "file" && kind !== "dir") ||
      !(data instanceof Uint8Array) ||
      (kind === "dir" && data.byteLength > 0) ||
      typeof mtimeMs !== "number" ||
      typeof birthtimeMs !== "number" ||
      !Number.isFinite(mtimeMs) ||
      !Number.isFinite(birthtimeMs)
    )
      return corrupted("an entry arrived malformed");
    if (rec.tmpPaths.has(path)) return corrupted(`${path} was handed on twice`);
    if (rec.tmp.length >= MAX_TMP_ENTRIES)
      return rec.violate("LIMIT_EXCEEDED", `/tmp: more than ${MAX_TMP_ENTRIES} files and directories to hand on to the next step`);
    if (rec.tmpBytes + data.byteLength > TMP_MAX_BYTES)
      return rec.violate("LIMIT_EXCEEDED", `/tmp: more than ${TMP_MAX_BYTES} bytes of files to hand on to the next step`);
    rec.tmpPaths.add(path);
    rec.tmpBytes += data.byteLength;
    rec.tmp.push({ path, kind, data, mtimeMs, birthtimeMs });
  }

  private onDbSet(key: unknown, json: unknown): DbRefusal | null {
    const rec = this.current;
    if (!rec) return { name: "TypeError", message: "this.db.set: the invocation has ended" };
    try {
      return rec.db.set(key, json);
    } catch (err) {
      return { name: "TypeError", message: `this.db.set: the source's data could not be read: ${(err as Error).message}` };
    }
  }

  private onRespond(status: unknown, headersJson: unknown, kind: unknown, body: unknown): void {
    const rec = this.current;
    if (!rec || rec.response) return;
    const fail = (code: "LIMIT_EXCEEDED" | "SANDBOX_CORRUPTED", message: string) => rec.violate(code, `http.respond: ${message}`);
    const max = this.env.limits.maxResponseBytes;
    const st = checkStatus(status);
    if (!st.ok) return fail("SANDBOX_CORRUPTED", st.message);
    if (typeof headersJson !== "string" || typeof kind !== "string" || !RESPONSE_KINDS.has(kind))
      return fail("SANDBOX_CORRUPTED", "the response arrived malformed");
    let headers: Record<string, string | string[]>;
    try {
      // Escaped values can take 6 characters per byte.
      const parsed = parseJson(headersJson, { maxDepth: 2, maxLength: MAX_RESPONSE_HEADERS * (6 * MAX_HEADER_VALUE_BYTES + 1024) });
      const checked = checkHeaders(parsed);
      if (!checked.ok) return fail("SANDBOX_CORRUPTED", checked.message);
      headers = { ...checked.value };
    } catch (err) {
      return fail("SANDBOX_CORRUPTED", `the headers are not acceptable: ${(err as Error).message}`);
    }
    let out: HttpResponse["body"];
    if (kind === "empty") {
      if (body !== null) return fail("SANDBOX_CORRUPTED", "the response arrived malformed");
      out = null;
    } else if (kind === "bytes") {
      if (!(body instanceof Uint8Array)) return fail("SANDBOX_CORRUPTED", "the response arrived malformed");
      if (body.byteLength > max) return fail("LIMIT_EXCEEDED", `the body is ${body.byteLength} bytes, over the limit of ${max} bytes`);
      out = { base64: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("base64") };
    } else {
      if (typeof body !== "string") return fail("SANDBOX_CORRUPTED", "the response arrived malformed");
      const bytes = body.length * 3 > max ? Buffer.byteLength(body) : body.length;
      if (bytes > max) return fail("LIMIT_EXCEEDED", `the body is ${bytes} bytes, over the limit of ${max} bytes`);
      if (kind === "json" && jsonDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
        return fail("LIMIT_EXCEEDED", `the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
      out = body;
    }
    const response: HttpResponse = { status: st.value, headers, body: out };
    rec.response = response;
    rec.onRespond(response);
  }

  private onTimer(op: unknown, id: unknown, ms: unknown): void {
    if (!this.current || typeof id !== "number") return;
    const existing = this.timers.get(id);
    if (existing) clearTimeout(existing);
    this.timers.delete(id);
    if (op !== "set" || this.timers.size >= MAX_TIMERS) return;
    // The run now awaits the host: its isolate's thread is free for other calls.
    this.running?.release();
    const delay = typeof ms === "number" && ms >= 0 ? Math.min(ms, 2 ** 31 - 1) : 0;
    this.timers.set(
      id,
      setTimeout(() => {
        this.timers.delete(id);
        this.dispatch("timer", id, null);
      }, delay),
    );
  }

  private onHttp(id: unknown, req: unknown): void {
    const rec = this.current;
    if (!rec || typeof id !== "number") return;
    this.running?.release();
    void this.runHttp(rec, id, req);
  }

  private async runHttp(rec: InvocationRecord, id: number, req: unknown): Promise<void> {
    const limits = this.env.limits;
    const r = (typeof req === "object" && req !== null ? req : {}) as Record<string, unknown>;
    const answer = (payload: unknown) => {
      if (this.current === rec) this.dispatch("http", id, payload);
    };
    if (typeof r["url"] !== "string" || typeof r["method"] !== "string") {
      answer({ error: { code: "INVALID_URL", message: "request needs a method and a url" } });
      return;
    }
    if (rec.answerOnly) {
      // Run beside the source's run to answer at once; what reaches out must wait its turn in order.
      rec.reachedOut = true;
      answer({ error: { code: "NETWORK", message: "requests are not sent by a run that may only answer; it will run again in turn" } });
      return;
    }
    const headers: Record<string, string | string[]> = {};
    if (typeof r["headers"] === "object" && r["headers"] !== null) {
      for (const [k, v] of Object.entries(r["headers"] as Record<string, unknown>)) {
        if (typeof v === "string") headers[k] = v;
        else if (Array.isArray(v)) headers[k] = v.map(String);
      }
    }
    const body = typeof r["body"] === "string" || r["body"] instanceof Uint8Array ? r["body"] : undefined;
    const remaining = Math.max(1, rec.deadline - Date.now());
    const askedTimeout = typeof r["timeoutMs"] === "number" && r["timeoutMs"] > 0 ? r["timeoutMs"] : limits.httpTimeoutMs;
    const askedMax =
      typeof r["maxResponseBytes"] === "number" && r["maxResponseBytes"] > 0 ? r["maxResponseBytes"] : limits.httpMaxResponseBytes;
    if (this.httpActive >= limits.httpMaxConcurrent) await new Promise<void>((resolve) => this.httpWaiting.push(resolve));
    this.httpActive++;
    try {
      const res = await outboundRequest(
        {
          url: r["url"],
          method: r["method"],
          headers,
          ...(body !== undefined ? { body } : {}),
          timeoutMs: Math.min(askedTimeout, remaining),
          maxResponseBytes: Math.min(askedMax, limits.httpMaxResponseBytes),
          ...(typeof r["maxRedirects"] === "number" ? { maxRedirects: Math.max(0, Math.min(20, r["maxRedirects"])) } : {}),
          decompress: r["decompress"] !== false,
        },
        { allowPrivateNetworks: this.env.allowPrivateNetworks },
      );
      answer({
        response: {
          status: res.status,
          statusText: res.statusText,
          headers: res.headers,
          body: new Uint8Array(res.body.buffer, res.body.byteOffset, res.body.byteLength),
          url: res.url,
          redirected: res.redirected,
        },
      });
    } catch (err) {
      const code = err instanceof OutboundError ? err.code : "NETWORK";
      answer({ error: { code, message: (err as Error).message } });
    } finally {
      this.httpActive--;
      this.httpWaiting.shift()?.();
    }
  }
}
