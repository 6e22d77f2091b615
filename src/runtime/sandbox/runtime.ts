// The Runtime: supervisor of the runner child processes. It routes each source to one child (so
// its warm isolate is found again), bounds concurrency, watches heartbeats, kills a child that
// stops answering, overruns an invocation or keeps sending malformed messages, and starts a fresh
// one in its place. Every message from a child is shape-checked, and the user's data in it
// (events, db, return value, exports, response) is re-checked for size and depth and parsed with
// the bounded parser: a bug or a compromise in the child cannot make this process throw.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { JsonLimitError, MAX_ENVELOPE_DEPTH, parseJson, stringifyJson } from "../../json/bounded.js";
import {
  defaultWarmContexts,
  defaultWarmIsolates,
  defaultWorkerCount,
  resolveLimits,
  type RuntimeOptions,
  type SandboxLimits,
} from "../config.js";
import {
  checkHeaders,
  checkMeta,
  checkStatus,
  MAX_HEADER_VALUE_BYTES,
  MAX_RESPONSE_HEADERS,
  MAX_SEND_BYTES,
  normalizeSend,
} from "../rules.js";
import type { Emit, HttpResponse, Invocation, InvocationCallbacks, InvocationError, InvocationOutcome, LogLine, Send } from "../types.js";
import { MAX_DESCRIBE_CHARS } from "./isolateResults.js";
import { preludeSource } from "./preludeBundle.js";
import { messagesOf, TurnBatchedSender } from "./turnBatch.js";
import {
  isRec,
  MAX_BATCH_ITEMS,
  ProtocolError,
  readWorkerMessage,
  tmpFromWire,
  tmpProblem,
  tmpToWire,
  type DescribeResult,
  type BatchItemResult,
  type HostToWorker,
  type InvokeBatchRequest,
  type InvokeRequest,
  type WorkerOutcome,
  type WorkerResponse,
} from "./protocol.js";

/** The operator's extra certificate authorities (Node reads the file at start): the runners' whole environment. */
/**
 * How long after its start an invocation may wait for requests it left pending (`settleRequests`
 * in the isolate): its timeout less a tenth (at most 2 s), so that it ends by itself before it is
 * stopped.
 */
function settleWithin(timeoutMs: number): number {
  return Math.max(0, timeoutMs - Math.min(2_000, Math.ceil(timeoutMs / 10)));
}

function runnerEnv(host: NodeJS.ProcessEnv): Record<string, string> {
  const extraCas = host["NODE_EXTRA_CA_CERTS"];
  return extraCas === undefined || extraCas === "" ? {} : { NODE_EXTRA_CA_CERTS: extraCas };
}

export class RuntimeClosedError extends Error {
  override readonly name = "RuntimeClosedError";
}

export class InvalidInvocationError extends Error {
  override readonly name = "InvalidInvocationError";
}

interface PendingInvoke {
  kind: "invoke";
  msg: InvokeRequest;
  inv: Invocation;
  callbacks: InvocationCallbacks;
  logs: LogLine[];
  logBytes: number;
  /** Lines past the limits, dropped here (the child enforces them too). */
  hostDroppedLogs: number;
  response: HttpResponse | undefined;
  resolve: (o: InvocationOutcome) => void;
  hardTimer: NodeJS.Timeout | undefined;
  overran: boolean;
  started: number;
}

interface PendingDescribe {
  kind: "describe";
  resolve: (r: DescribeResult) => void;
  started: number;
}

/** A batch of one source's runs sent as one message; each item settles like a single invocation. */
interface PendingBatch {
  kind: "batch";
  msg: InvokeBatchRequest;
  inv: Invocation;
  items: PendingInvoke[];
  hardTimer: NodeJS.Timeout | undefined;
  overran: boolean;
  /** The child never answered the batch (it crashed, was killed or sent garbage). */
  failedWhole: boolean;
}

type Pending = PendingInvoke | PendingDescribe | PendingBatch;

const WORKER_PATH = fileURLToPath(new URL("./worker.js", import.meta.url));
/**
 * V8 flags of the runner children. V8's memory reducer runs up to three full GCs in an isolate
 * once its allocation slows down, and a child holds many small isolates that each go quiet between
 * their sources' runs: in `bench:many-sources` those GCs were about a fifth of the children's
 * CPU samples. One GC per quiet spell keeps most of what the reducer gives back (docs/decisions.md,
 * "The runner children's V8 flags").
 */
const RUNNER_V8_FLAGS: readonly string[] = ["--memory-reducer-single-gc"];
const VALID_METHODS = new Set(["run", "deploy", "activate", "deactivate", "additionalProps", "options"]);
/** Malformed messages from one child within this window after which it is killed and replaced. */
const BAD_MESSAGE_WINDOW_MS = 60_000;
const MAX_BAD_MESSAGES = 3;
const META_KEYS = new Set(["id", "name", "summary", "ts"]);

function protocolFailure(reason: string): InvocationError {
  return {
    name: "SandboxProtocolError",
    code: "SANDBOX_PROTOCOL",
    message: `the runner process sent a malformed message (${reason.slice(0, 300)}); the invocation was aborted`,
  };
}

class RunnerProcess {
  child: ChildProcess | undefined;
  ready: Promise<void> = Promise.resolve();
  markReady: () => void = () => {};
  /** Whether `ready` has resolved (a pending one is kept when the child is replaced again). */
  isReady = true;
  readonly pending = new Map<number, Pending>();
  readonly knownBundles = new Set<string>();
  readonly waiting: (() => void)[] = [];
  lastPong = Date.now();
  killReason: InvocationError | undefined;
  restarts = 0;
  recentCrashes: number[] = [];
  badMessages: number[] = [];
  /** Writes to the current child, a turn's messages at once (turnBatch.ts). */
  sender: TurnBatchedSender<HostToWorker> | undefined;

  constructor(readonly index: number) {}

  get inFlight(): number {
    return this.pending.size;
  }
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** What the runtime tells its host about, beside the outcomes of runs. */
export interface RuntimeEvents {
  /** A sandbox process exited or was killed (crash, no heartbeat, a run past its hard limit) and is being replaced. */
  readonly onReplaced?: (replaced: {
    readonly pid: number | undefined;
    readonly reason: InvocationError;
    readonly exitCode: number | null;
    readonly signal: NodeJS.Signals | null;
    /** Invocations (or batches) it held, each failed with `reason`. */
    readonly inFlight: number;
  }) => void;
}

export class Runtime {
  readonly limits: SandboxLimits;
  /** Invocations the children answered, by whether the source's context was warm or had to be made (a cold start). */
  readonly starts = { warm: 0, cold: 0 };
  private readonly runners: RunnerProcess[];
  private readonly opts: Required<Omit<RuntimeOptions, "limits" | "timeoutMs" | "memoryMb" | "workers" | "workerPath">> & {
    workers: number;
    workerPath: string;
  };
  private nextId = 1;
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  private prelude: Promise<string>;
  private describeCursor = 0;
  /** Runs of one source wait here for the previous one, so each starts its clock when it starts. */
  private readonly sourceQueues = new Map<string, Promise<unknown>>();

  constructor(
    options: RuntimeOptions,
    private readonly events: RuntimeEvents = {},
  ) {
    this.limits = resolveLimits(options);
    // The runner children refuse anything else (protocol.ts): say so here, not as a hang later.
    for (const [name, value] of Object.entries(this.limits)) {
      if (!Number.isSafeInteger(value) || value <= 0)
        throw new TypeError(`runtime limit ${name} must be a positive integer, got ${String(value)}`);
    }
    const workers = options.workers ?? defaultWorkerCount();
    this.opts = {
      workers,
      cacheDir: options.cacheDir,
      allowPrivateNetworks: options.allowPrivateNetworks ?? false,
      maxWarmIsolates: options.maxWarmIsolates ?? defaultWarmIsolates(workers),
      maxWarmContexts: options.maxWarmContexts ?? defaultWarmContexts(workers),
      maxConcurrentPerWorker: options.maxConcurrentPerWorker ?? 32,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 1000,
      heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? 10_000,
      hardKillGraceMs: options.hardKillGraceMs ?? 5000,
      loadTimeoutMs: options.loadTimeoutMs ?? 10_000,
      workerPath: options.workerPath ?? WORKER_PATH,
    };
    this.prelude = preludeSource();
    this.runners = Array.from({ length: Math.max(1, this.opts.workers) }, (_, i) => new RunnerProcess(i));
    for (const runner of this.runners) {
      resetReady(runner);
      this.spawn(runner);
    }
    this.heartbeat = setInterval(() => this.checkHeartbeats(), this.opts.heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  get cacheDir(): string {
    return this.opts.cacheDir;
  }

  get allowPrivateNetworks(): boolean {
    return this.opts.allowPrivateNetworks;
  }

  /** Resolves once every runner process has started. */
  async ready(): Promise<void> {
    await Promise.all(this.runners.map((r) => r.ready));
  }

  /** Process ids of the runner children, for operators and tests. */
  pids(): (number | undefined)[] {
    return this.runners.map((r) => r.child?.pid);
  }

  get workerCount(): number {
    return this.runners.length;
  }

  private spawn(runner: RunnerProcess): void {
    const child = fork(this.opts.workerPath, [], {
      execArgv: ["--no-node-snapshot", ...RUNNER_V8_FLAGS],
      // Components never see the environment. The runner gets only the operator's extra
      // certificate authorities: its outbound HTTPS trusts what the node's own does.
      env: runnerEnv(process.env),
      // JSON, not structured clone: decoding cannot overflow the stack, however nested a message.
      serialization: "json",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    runner.child = child;
    runner.killReason = undefined;
    runner.knownBundles.clear();
    runner.badMessages = [];
    runner.lastPong = Date.now();
    // What is sent to this child in one turn goes in one write, and only ever to this child.
    runner.sender = new TurnBatchedSender<HostToWorker>((message) => {
      if (runner.child !== child || !child.connected) return;
      try {
        child.send(message);
      } catch {
        /* the exit handler fails the pending work */
      }
    });
    child.on("message", (raw: unknown) => {
      if (runner.child !== child) return;
      // Never throws out of the handler: that would take the host process down.
      let messages: readonly unknown[];
      try {
        messages = messagesOf(raw);
      } catch (err) {
        safeCall(() => this.onBadMessage(runner, err));
        return;
      }
      for (const message of messages) {
        if (runner.child !== child) return;
        try {
          this.onMessage(runner, message);
        } catch (err) {
          safeCall(() => this.onBadMessage(runner, err));
        }
      }
    });
    child.on("exit", (code, signal) => this.onExit(runner, child, code, signal));
    child.on("error", () => {
      /* exit follows */
    });
    void this.prelude.then(
      (prelude) =>
        this.send(runner, {
          type: "init",
          prelude,
          limits: this.limits,
          allowPrivateNetworks: this.opts.allowPrivateNetworks,
          maxWarmIsolates: this.opts.maxWarmIsolates,
          maxWarmContexts: this.opts.maxWarmContexts,
        }),
      (err) => process.stderr.write(`headwater runtime: cannot build the sandbox prelude: ${String(err)}\n`),
    );
  }

  private send(runner: RunnerProcess, msg: HostToWorker): void {
    const child = runner.child;
    if (!child || !child.connected) return;
    runner.sender?.send(msg);
  }

  private onExit(runner: RunnerProcess, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (runner.child !== child) return;
    runner.child = undefined;
    // Work arriving from now on waits for the replacement child.
    if (!this.closed) resetReady(runner);
    const reason: InvocationError = runner.killReason ?? {
      name: "RunnerCrashedError",
      code: "RUNNER_CRASHED",
      message: `the runner process exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`}); the invocation was aborted`,
    };
    // For the operator's log: each aborted run is also on its source's $errors and in its logs.
    if (!this.closed) {
      this.events.onReplaced?.({ pid: child.pid, reason, exitCode: code, signal, inFlight: runner.pending.size });
    }
    for (const [id, pending] of runner.pending) {
      runner.pending.delete(id);
      if (pending.kind === "invoke") {
        const error: InvocationError = pending.overran
          ? {
              name: "TimeoutError",
              code: "TIMEOUT",
              message: `the invocation did not stop within ${pending.msg.timeoutMs} ms; its runner process was killed and replaced`,
            }
          : reason;
        this.finishInvoke(runner, pending, null, error);
      } else if (pending.kind === "batch") {
        clearTimeout(pending.hardTimer);
        pending.failedWhole = true;
        const error: InvocationError = pending.overran
          ? {
              name: "TimeoutError",
              code: "TIMEOUT",
              message: `the batch of ${pending.items.length} runs did not stop within its ${pending.items.length} run timeouts; its runner process was killed and replaced`,
            }
          : reason;
        for (const item of pending.items) this.finishInvoke(runner, item, null, error);
      } else {
        pending.resolve({ ok: false, error: reason, logs: [] });
      }
    }
    if (this.closed) return;
    runner.restarts++;
    const now = Date.now();
    runner.recentCrashes = runner.recentCrashes.filter((t) => now - t < 10_000);
    runner.recentCrashes.push(now);
    // A crash loop backs off instead of spinning.
    const delay = runner.recentCrashes.length > 5 ? 1000 : 0;
    setTimeout(() => {
      if (!this.closed) {
        this.spawn(runner);
        this.drain(runner);
      }
    }, delay).unref();
  }

  private kill(runner: RunnerProcess, reason: InvocationError): void {
    if (!runner.child) return;
    runner.killReason ??= reason;
    runner.child.kill("SIGKILL");
    // No new work for a dying child: acquire() and ready() wait for the replacement.
    if (!this.closed) resetReady(runner);
    try {
      if (runner.child.connected) runner.child.disconnect();
    } catch {
      /* already gone */
    }
  }

  private checkHeartbeats(): void {
    const now = Date.now();
    for (const runner of this.runners) {
      if (!runner.child || !runner.child.connected) continue;
      if (now - runner.lastPong > this.opts.heartbeatTimeoutMs) {
        this.kill(runner, {
          name: "RunnerUnresponsiveError",
          code: "RUNNER_UNRESPONSIVE",
          message: `the runner process stopped answering for ${this.opts.heartbeatTimeoutMs} ms and was replaced; the invocation was aborted`,
        });
      } else this.send(runner, { type: "ping", seq: now });
    }
  }

  private onMessage(runner: RunnerProcess, raw: unknown): void {
    const msg = readWorkerMessage(raw, this.limits);
    runner.lastPong = Date.now();
    if (msg.type === "ready") {
      runner.markReady();
      return;
    }
    if (msg.type === "pong") return;
    const pending = runner.pending.get(msg.id);
    if (!pending) return;
    switch (msg.type) {
      case "logs":
        if (pending.kind !== "invoke") return;
        for (const line of msg.lines) this.addLog(pending, line);
        return;
      case "respond": {
        if (pending.kind !== "invoke" || pending.response) return;
        const response = this.readResponse(msg.response, msg.id);
        pending.response = response;
        safeCall(() => pending.callbacks.onRespond?.(response));
        return;
      }
      case "need-bundle":
        if (pending.kind === "describe") return;
        runner.knownBundles.add(pending.msg.bundleKey);
        if (pending.kind === "batch") this.send(runner, { ...pending.msg, bundle: pending.inv.bundle });
        else this.send(runner, { ...pending.msg, bundle: pending.inv.bundle });
        return;
      case "result":
        if (pending.kind === "describe") return;
        runner.pending.delete(msg.id);
        if (pending.kind === "batch") {
          // The child could not run the batch at all (it found the message malformed).
          clearTimeout(pending.hardTimer);
          for (const item of pending.items) this.finishInvoke(runner, item, msg.outcome, undefined);
        } else this.finishInvoke(runner, pending, msg.outcome, undefined);
        this.drain(runner);
        return;
      case "batch-result":
        if (pending.kind !== "batch") return;
        runner.pending.delete(msg.id);
        this.finishBatch(runner, pending, msg.items);
        this.drain(runner);
        return;
      case "described": {
        if (pending.kind !== "describe") return;
        runner.pending.delete(msg.id);
        const r = msg.result;
        if (!r.ok) pending.resolve(r);
        else {
          try {
            pending.resolve({ ok: true, describe: parseJson(r.describe, { maxLength: MAX_DESCRIBE_CHARS }), logs: r.logs });
          } catch (err) {
            pending.resolve({ ok: false, error: protocolFailure(`the description: ${(err as Error).message}`), logs: r.logs });
          }
        }
        this.drain(runner);
        return;
      }
    }
  }

  /** A message that failed its checks: fails its invocation; repeated garbage replaces the child. */
  private onBadMessage(runner: RunnerProcess, err: unknown): void {
    const reason = String((err as Error)?.message ?? err);
    const id = err instanceof ProtocolError ? err.id : undefined;
    const pending = id === undefined ? undefined : runner.pending.get(id);
    if (pending) {
      runner.pending.delete(id!);
      if (pending.kind === "invoke") this.finishInvoke(runner, pending, null, protocolFailure(reason));
      else if (pending.kind === "batch") {
        clearTimeout(pending.hardTimer);
        pending.failedWhole = true;
        for (const item of pending.items) this.finishInvoke(runner, item, null, protocolFailure(reason));
      } else pending.resolve({ ok: false, error: protocolFailure(reason), logs: [] });
      this.drain(runner);
    }
    this.countBadMessage(runner);
  }

  private countBadMessage(runner: RunnerProcess): void {
    const now = Date.now();
    runner.badMessages = runner.badMessages.filter((t) => now - t < BAD_MESSAGE_WINDOW_MS);
    runner.badMessages.push(now);
    if (runner.badMessages.length >= MAX_BAD_MESSAGES) {
      this.kill(runner, {
        name: "SandboxProtocolError",
        code: "SANDBOX_PROTOCOL",
        message: "the runner process kept sending malformed messages and was replaced; the invocation was aborted",
      });
    }
  }

  private addLog(pending: PendingInvoke, line: LogLine): void {
    const { maxLogLines, maxLogBytes, maxLogLineChars } = this.limits;
    if (
      pending.logs.length >= maxLogLines ||
      pending.logBytes + Math.min(line.message.length, maxLogLineChars) > maxLogBytes + maxLogLineChars
    ) {
      pending.hostDroppedLogs++;
      return;
    }
    pending.logBytes += line.message.length;
    pending.logs.push(line);
    safeCall(() => pending.callbacks.onLog?.(line));
  }

  private readResponse(r: WorkerResponse, id: number): HttpResponse {
    const max = this.limits.maxResponseBytes;
    const status = checkStatus(r.status);
    if (!status.ok) throw new ProtocolError(status.message, id);
    let headers: Record<string, string | string[]>;
    try {
      const checked = checkHeaders(
        parseJson(r.headers, { maxDepth: 2, maxLength: MAX_RESPONSE_HEADERS * (6 * MAX_HEADER_VALUE_BYTES + 1024) }),
      );
      if (!checked.ok) throw new Error(checked.message);
      headers = { ...checked.value };
    } catch (err) {
      throw new ProtocolError(`response headers: ${(err as Error).message}`, id);
    }
    if (r.body === null) return { status: status.value, headers, body: null };
    if (r.base64) {
      if (r.body.length > Math.ceil(max / 3) * 4 || !/^[A-Za-z0-9+/]*={0,2}$/.test(r.body))
        throw new ProtocolError("the response body is not base64 within the limit", id);
      return { status: status.value, headers, body: { base64: r.body } };
    }
    if (Buffer.byteLength(r.body) > max) throw new ProtocolError(`the response body is over ${max} bytes`, id);
    return { status: status.value, headers, body: r.body };
  }

  /** Parses and re-checks the user's data in an outcome; throws ProtocolError naming what failed. */
  private readUserData(
    pending: PendingInvoke,
    outcome: WorkerOutcome,
    emits: Emit[],
    sends: Send[],
  ): Pick<InvocationOutcome, "db" | "returnValue" | "exports" | "tmp"> {
    const { maxEmitBytes, maxDbBytes } = this.limits;
    const id = pending.msg.id;
    const bounded = (text: string, what: string, maxBytes: number): unknown => {
      const bytes = text.length * 3 > maxBytes ? Buffer.byteLength(text) : text.length;
      if (bytes > maxBytes) throw new ProtocolError(`${what} is ${bytes} bytes, over the limit of ${maxBytes}`, id);
      try {
        return parseJson(text, { maxLength: maxBytes });
      } catch (err) {
        throw new ProtocolError(`${what}: ${(err as Error).message}`, id);
      }
    };
    for (const e of outcome.emits) {
      const meta = e.meta as unknown as Record<string, unknown>;
      const checked = checkMeta(meta["id"], meta["name"], meta["summary"], meta["ts"]);
      if (!checked.ok || Object.keys(meta).some((k) => !META_KEYS.has(k)))
        throw new ProtocolError(`an emit's meta: ${checked.ok ? "unknown fields" : checked.message}`, id);
      emits.push({ event: bounded(e.event, "an emitted event", maxEmitBytes), meta: checked.value });
    }
    for (const text of outcome.sends ?? []) {
      const value = bounded(text, "a send", MAX_SEND_BYTES);
      const checked = normalizeSend(isRec(value) ? value["kind"] : undefined, value);
      if (!checked.ok) throw new ProtocolError(`a send: ${checked.message}`, id);
      sends.push(checked.value);
    }
    const out: Pick<InvocationOutcome, "db" | "returnValue" | "exports" | "tmp"> = { db: pending.inv.db ?? {} };
    if (outcome.tmp !== undefined) {
      if (pending.msg.keepTmp !== true) throw new ProtocolError("/tmp was handed on by a run that was not asked for it", id);
      out.tmp = tmpFromWire(outcome.tmp);
    }
    if (outcome.db !== undefined) {
      // Escaping can take 6 characters per byte; the input snapshot may already be over the limit.
      const maxLength = 6 * Math.max(maxDbBytes, pending.msg.db.length) + 65_536;
      let db: unknown;
      try {
        db = parseJson(outcome.db, { maxLength });
      } catch (err) {
        throw new ProtocolError(`the db snapshot: ${(err as Error).message}`, id);
      }
      if (!isRec(db)) throw new ProtocolError("the db snapshot is not an object", id);
      const size = dbSize(db);
      if (size > maxDbBytes && size > dbSize(pending.inv.db ?? {}))
        throw new ProtocolError(`the db snapshot is ${size} bytes, over the limit of ${maxDbBytes}`, id);
      out.db = db;
    }
    if (outcome.returnValue !== undefined) out.returnValue = bounded(outcome.returnValue, "the return value", maxEmitBytes);
    if (outcome.exports !== undefined) {
      const exports = bounded(outcome.exports, "the exports", maxEmitBytes);
      if (!isRec(exports)) throw new ProtocolError("the exports are not an object", id);
      out.exports = exports;
    }
    return out;
  }

  private finishInvoke(
    runner: RunnerProcess,
    pending: PendingInvoke,
    outcome: WorkerOutcome | null,
    error: InvocationError | undefined,
  ): void {
    clearTimeout(pending.hardTimer);
    if (outcome) this.starts[outcome.warm ? "warm" : "cold"]++;
    const emits: Emit[] = [];
    const sends: Send[] = [];
    let data: Pick<InvocationOutcome, "db" | "returnValue" | "exports" | "tmp"> = { db: pending.inv.db ?? {} };
    let protocolError: InvocationError | undefined;
    if (outcome) {
      try {
        data = this.readUserData(pending, outcome, emits, sends);
      } catch (err) {
        // Emits that passed before the bad part are kept, as after any failure.
        protocolError = protocolFailure(String((err as Error)?.message ?? err));
        data = { db: pending.inv.db ?? {} };
        this.countBadMessage(runner);
      }
    }
    const logs = pending.logs;
    const dropped = (outcome?.droppedLogLines ?? 0) + pending.hostDroppedLogs;
    if (dropped > 0) {
      const line: LogLine = {
        ts: Date.now(),
        level: "system",
        message: `[log output truncated: ${dropped} more console line(s) dropped; the limit is ${this.limits.maxLogLines} lines and ${this.limits.maxLogBytes} bytes per invocation]`,
      };
      logs.push(line);
      safeCall(() => pending.callbacks.onLog?.(line));
    }
    const dbChanged = outcome?.dbChanged === true && protocolError === undefined;
    const err = error ?? protocolError ?? outcome?.error;
    const result: InvocationOutcome = {
      ok: outcome?.ok === true && !err,
      emits,
      logs,
      db: dbChanged ? data.db : (pending.inv.db ?? {}),
      dbChanged,
      cpuMs: outcome?.cpuMs ?? 0,
      wallMs: outcome?.wallMs ?? Date.now() - pending.started,
      warm: outcome?.warm ?? false,
    };
    if (err) result.error = err;
    if (sends.length > 0) result.sends = sends;
    if (pending.response) result.response = pending.response;
    if (result.ok && data.returnValue !== undefined) result.returnValue = data.returnValue;
    if (result.ok && data.exports) result.exports = data.exports;
    if (result.ok && outcome?.exited) result.exited = outcome.exited;
    if (result.ok && data.tmp && data.tmp.length > 0) result.tmp = data.tmp;
    if (outcome?.reachedOut === true) result.reachedOut = true;
    pending.resolve(result);
  }

  /**
   * Settles a batch's items from the child's one answer, in order: each item's db is the one the
   * previous accepted item left (as in the child); once an item's data is refused, the child's db
   * chain can no longer be trusted and the items after it fail too.
   */
  private finishBatch(runner: RunnerProcess, batch: PendingBatch, results: BatchItemResult[]): void {
    clearTimeout(batch.hardTimer);
    const byId = new Map(results.map((r) => [r.id, r]));
    let db = batch.inv.db ?? {};
    let broken: InvocationError | undefined;
    for (const item of batch.items) {
      item.inv = { ...item.inv, db };
      const result = byId.get(item.msg.id);
      if (broken || !result) {
        this.finishInvoke(runner, item, null, broken ?? protocolFailure("the batch answer lacks this run"));
        continue;
      }
      for (const line of result.logs) this.addLog(item, line);
      try {
        if (result.response) {
          item.response = this.readResponse(result.response, item.msg.id);
          const response = item.response;
          safeCall(() => item.callbacks.onRespond?.(response));
        }
      } catch (err) {
        broken = protocolFailure(String((err as Error)?.message ?? err));
        this.finishInvoke(runner, item, null, broken);
        continue;
      }
      let settled: InvocationOutcome | undefined;
      const resolve = item.resolve;
      item.resolve = (o) => {
        settled = o;
        resolve(o);
      };
      this.finishInvoke(runner, item, result.outcome, undefined);
      if (settled?.error?.code === "SANDBOX_PROTOCOL") broken = settled.error;
      else if (settled) db = settled.db;
    }
  }

  private runnerFor(inv: Invocation): RunnerProcess {
    return this.runners[fnv1a(`${inv.ownerId}\u0000${inv.sourceId}`) % this.runners.length];
  }

  /** Waits for a free invocation slot on `runner` and a started child. */
  private async acquire(runner: RunnerProcess): Promise<void> {
    for (;;) {
      if (this.closed) throw new RuntimeClosedError("the runtime is closed");
      await runner.ready;
      if (runner.child?.connected && runner.inFlight < this.opts.maxConcurrentPerWorker) return;
      await new Promise<void>((resolve) => runner.waiting.push(resolve));
    }
  }

  private drain(runner: RunnerProcess): void {
    while (runner.waiting.length > 0 && runner.inFlight < this.opts.maxConcurrentPerWorker) runner.waiting.shift()!();
  }

  /** Runs one invocation of a component for a source. Never rejects for component failures. */
  invoke(inv: Invocation, callbacks: InvocationCallbacks = {}): Promise<InvocationOutcome> {
    try {
      validateInvocation(inv);
    } catch (err) {
      return Promise.reject(err);
    }
    const key = `${inv.ownerId}\u0000${inv.sourceId}`;
    const previous = this.sourceQueues.get(key) ?? Promise.resolve();
    const next = previous.then(
      () => this.invokeNow(inv, callbacks),
      () => this.invokeNow(inv, callbacks),
    );
    this.sourceQueues.set(key, next);
    const cleanup = () => {
      if (this.sourceQueues.get(key) === next) this.sourceQueues.delete(key);
    };
    next.then(cleanup, cleanup);
    return next;
  }

  /** The invocation as JSON text for the child (bounded like everything that crosses to it). */
  private payloadOf(inv: Invocation): { payload: string; db: string } {
    const { maxEmitBytes, maxEmitsPerRun, maxLogBytes, maxLogLines, maxLogLineChars, maxDbBytes, maxResponseBytes } = this.limits;
    try {
      // The envelope adds a few levels to the user's data.
      const payload = stringifyJson(
        {
          method: inv.method,
          props: inv.props ?? {},
          event: inv.event,
          http: inv.http,
          additionalProps: inv.additionalProps?.map((prop) => ({
            name: prop.name,
            type: prop.type,
            ...(prop.default !== undefined ? { default: prop.default } : {}),
            ...(prop.customResponse === true ? { customResponse: true } : {}),
          })),
          steps: inv.steps,
          limits: { maxEmitBytes, maxEmitsPerRun, maxLogBytes, maxLogLines, maxLogLineChars, maxDbBytes, maxResponseBytes },
          settleMs: settleWithin(inv.limits?.timeoutMs ?? this.limits.timeoutMs),
        },
        { maxDepth: MAX_ENVELOPE_DEPTH },
      );
      return { payload, db: stringifyJson(inv.db ?? {}, { maxDepth: MAX_ENVELOPE_DEPTH }) };
    } catch (err) {
      const why =
        err instanceof JsonLimitError && err.reason === "too_deep" ? err.message : `not JSON-serializable: ${(err as Error).message}`;
      throw new InvalidInvocationError(`invocation props, event or db are ${why}`);
    }
  }

  /**
   * Runs several invocations of one source (same owner, bundle and method) in order, entering the
   * runner child once: one message there, one answer back. Each run keeps its own timeout and
   * limits and its own outcome; each run's db is the one the previous run left (`db` of the first
   * is the batch's). If the child dies or stops answering mid-batch, the runs are tried again one
   * by one, so only the run that brought it down fails (the others may have run twice in the sandbox;
   * nothing is recorded before the batch's outcomes are). Never rejects for component failures.
   */
  invokeBatch(invs: readonly Invocation[], callbacks: readonly InvocationCallbacks[] = []): Promise<InvocationOutcome[]> {
    if (invs.length === 0) return Promise.resolve([]);
    try {
      for (const inv of invs) validateInvocation(inv);
      const first = invs[0];
      const bundleKey = first.bundleHash ?? first.codeHash;
      if (
        invs.length > MAX_BATCH_ITEMS ||
        invs.some(
          (inv) =>
            inv.ownerId !== first.ownerId ||
            inv.sourceId !== first.sourceId ||
            (inv.bundleHash ?? inv.codeHash) !== bundleKey ||
            inv.method !== first.method ||
            inv.limits?.timeoutMs !== first.limits?.timeoutMs ||
            inv.limits?.memoryMb !== first.limits?.memoryMb,
        )
      )
        throw new InvalidInvocationError(`a batch is at most ${MAX_BATCH_ITEMS} runs of one source, bundle, method and limits`);
      // A workflow's steps are invoked one by one; a batch is a source's runs, which start with an empty /tmp.
      if (invs.length > 1 && invs.some((inv) => inv.tmp !== undefined || inv.keepTmp !== undefined))
        throw new InvalidInvocationError("a batch carries no /tmp");
      if (invs.length > 1 && invs.some((inv) => inv.answerOnly !== undefined))
        throw new InvalidInvocationError("a batch is no answer-only run (see Invocation.answerOnly)");
    } catch (err) {
      return Promise.reject(err);
    }
    const key = `${invs[0].ownerId}\u0000${invs[0].sourceId}`;
    const previous = this.sourceQueues.get(key) ?? Promise.resolve();
    const run = () =>
      invs.length === 1 ? this.invokeNow(invs[0], callbacks[0] ?? {}).then((o) => [o]) : this.invokeBatchNow(invs, callbacks);
    const next = previous.then(run, run);
    this.sourceQueues.set(key, next);
    const cleanup = () => {
      if (this.sourceQueues.get(key) === next) this.sourceQueues.delete(key);
    };
    next.then(cleanup, cleanup);
    return next;
  }

  private async invokeBatchNow(invs: readonly Invocation[], callbacks: readonly InvocationCallbacks[]): Promise<InvocationOutcome[]> {
    const first = invs[0];
    const timeoutMs = first.limits?.timeoutMs ?? this.limits.timeoutMs;
    const memoryMb = Math.max(8, first.limits?.memoryMb ?? this.limits.memoryMb);
    const { db } = this.payloadOf({ ...first, event: undefined });
    const payloads = invs.map((inv) => this.payloadOf({ ...inv, db: {} }).payload);
    const runner = this.runnerFor(first);
    await this.acquire(runner);
    const bundleKey = first.bundleHash ?? first.codeHash;
    const known = this.noteBundle(runner, bundleKey);
    const batchId = this.nextId++;
    const items = invs.map((inv, i) => ({ id: this.nextId++, payload: payloads[i] }));
    const msg: InvokeBatchRequest = {
      type: "invoke-batch",
      id: batchId,
      ownerId: first.ownerId,
      sourceId: first.sourceId,
      bundleKey,
      method: first.method,
      items,
      db,
      timeoutMs,
      memoryMb,
    };
    const started = Date.now();
    const outcomes: Promise<InvocationOutcome>[] = [];
    const pendingItems = invs.map((inv, i): PendingInvoke => {
      const item: PendingInvoke = {
        kind: "invoke",
        msg: {
          type: "invoke",
          id: items[i].id,
          ownerId: inv.ownerId,
          sourceId: inv.sourceId,
          bundleKey,
          method: inv.method,
          payload: "",
          db,
          timeoutMs,
          memoryMb,
        },
        inv,
        callbacks: callbacks[i] ?? {},
        logs: [],
        logBytes: 0,
        hostDroppedLogs: 0,
        response: undefined,
        resolve: () => {},
        hardTimer: undefined,
        overran: false,
        started,
      };
      outcomes.push(new Promise<InvocationOutcome>((resolve) => (item.resolve = resolve)));
      return item;
    });
    const batch: PendingBatch = {
      kind: "batch",
      msg,
      inv: first,
      items: pendingItems,
      hardTimer: undefined,
      overran: false,
      failedWhole: false,
    };
    // The child enforces each run's timeout; this backstop allows every run its full time.
    batch.hardTimer = setTimeout(
      () => {
        batch.overran = true;
        this.kill(runner, {
          name: "RunnerRestartedError",
          code: "RUNNER_CRASHED",
          message: "the runner process was restarted because another invocation would not stop; this invocation was aborted",
        });
      },
      timeoutMs * invs.length + this.opts.hardKillGraceMs,
    );
    batch.hardTimer.unref();
    runner.pending.set(batchId, batch);
    this.send(runner, known ? msg : { ...msg, bundle: first.bundle });
    const settled = await Promise.all(outcomes);
    if (!batch.failedWhole) return settled;
    // One by one, so the run that brought the child down fails alone.
    const again: InvocationOutcome[] = [];
    let current = first.db ?? {};
    for (let i = 0; i < invs.length; i++) {
      const outcome = await this.invokeNow({ ...invs[i], db: current }, callbacks[i] ?? {});
      again.push(outcome);
      current = outcome.db;
    }
    return again;
  }

  /** Whether the child holds the bundle already (remembered as sent from now on). */
  private noteBundle(runner: RunnerProcess, bundleKey: string): boolean {
    const known = runner.knownBundles.has(bundleKey);
    if (!known) {
      runner.knownBundles.add(bundleKey);
      if (runner.knownBundles.size > 256) runner.knownBundles.delete(runner.knownBundles.values().next().value as string);
    }
    return known;
  }

  private async invokeNow(inv: Invocation, callbacks: InvocationCallbacks): Promise<InvocationOutcome> {
    const timeoutMs = inv.limits?.timeoutMs ?? this.limits.timeoutMs;
    const memoryMb = Math.max(8, inv.limits?.memoryMb ?? this.limits.memoryMb);
    const { payload, db } = this.payloadOf(inv);
    const runner = this.runnerFor(inv);
    await this.acquire(runner);
    const id = this.nextId++;
    const bundleKey = inv.bundleHash ?? inv.codeHash;
    const known = this.noteBundle(runner, bundleKey);
    const msg: InvokeRequest = {
      type: "invoke",
      id,
      ownerId: inv.ownerId,
      sourceId: inv.sourceId,
      bundleKey,
      method: inv.method,
      payload,
      db,
      timeoutMs,
      memoryMb,
      ...(inv.tmp !== undefined && inv.tmp.length > 0 ? { tmp: tmpToWire(inv.tmp) } : {}),
      ...(inv.keepTmp === true ? { keepTmp: true } : {}),
      ...(inv.answerOnly === true ? { answerOnly: true } : {}),
    };
    return new Promise<InvocationOutcome>((resolve) => {
      const pending: PendingInvoke = {
        kind: "invoke",
        msg,
        inv,
        callbacks,
        logs: [],
        logBytes: 0,
        hostDroppedLogs: 0,
        response: undefined,
        resolve,
        hardTimer: undefined,
        overran: false,
        started: Date.now(),
      };
      // The child enforces the timeout; this is the backstop for a child that cannot.
      pending.hardTimer = setTimeout(() => {
        pending.overran = true;
        this.kill(runner, {
          name: "RunnerRestartedError",
          code: "RUNNER_CRASHED",
          message: "the runner process was restarted because another invocation would not stop; this invocation was aborted",
        });
      }, timeoutMs + this.opts.hardKillGraceMs);
      pending.hardTimer.unref();
      runner.pending.set(id, pending);
      this.send(runner, known ? msg : { ...msg, bundle: inv.bundle });
    });
  }

  /** Loads a bundle in a fresh, throwaway isolate and describes the exported component. */
  async describe(bundle: string): Promise<DescribeResult> {
    const runner = this.runners[this.describeCursor++ % this.runners.length];
    await this.acquire(runner);
    const id = this.nextId++;
    return new Promise<DescribeResult>((resolve) => {
      runner.pending.set(id, { kind: "describe", resolve, started: Date.now() });
      this.send(runner, { type: "describe", id, bundle, timeoutMs: this.opts.loadTimeoutMs, memoryMb: this.limits.memoryMb });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    await Promise.all(
      this.runners.map(async (runner) => {
        for (const resolve of runner.waiting.splice(0)) resolve();
        runner.markReady(); // wakes work waiting for a replacement child that will not come
        const child = runner.child;
        if (!child) return;
        runner.killReason = {
          name: "RuntimeClosedError",
          code: "RUNTIME_CLOSED",
          message: "the runtime was closed; the invocation was aborted",
        };
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        this.send(runner, { type: "shutdown" });
        const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
}

function resetReady(runner: RunnerProcess): void {
  // Whoever already waits on a pending promise must be woken by the next child's "ready".
  if (!runner.isReady) return;
  runner.isReady = false;
  runner.ready = new Promise<void>((resolve) => {
    runner.markReady = () => {
      runner.isReady = true;
      resolve();
    };
  });
}

/** this.db size as the limit counts it: UTF-8 bytes of every key and its JSON value. */
function dbSize(db: Record<string, unknown>): number {
  let size = 0;
  for (const [k, v] of Object.entries(db)) size += Buffer.byteLength(k) + Buffer.byteLength(JSON.stringify(v) ?? "");
  return size;
}

function safeCall(fn: () => void): void {
  try {
    fn();
  } catch {
    /* a throwing callback must not break the runtime */
  }
}

function validateInvocation(inv: Invocation): void {
  const problems: string[] = [];
  for (const key of ["invocationId", "ownerId", "sourceId", "codeHash", "bundle"] as const) {
    if (typeof inv[key] !== "string" || inv[key].length === 0) problems.push(`${key} must be a non-empty string`);
  }
  if (!VALID_METHODS.has(inv.method)) problems.push(`method must be run, deploy, activate or deactivate`);
  if (inv.limits?.timeoutMs !== undefined && !(Number.isInteger(inv.limits.timeoutMs) && inv.limits.timeoutMs > 0))
    problems.push("limits.timeoutMs must be a positive integer");
  if (inv.limits?.memoryMb !== undefined && !(Number.isInteger(inv.limits.memoryMb) && inv.limits.memoryMb >= 8))
    problems.push("limits.memoryMb must be an integer >= 8");
  if (inv.db !== undefined && !isRec(inv.db)) problems.push("db must be an object");
  if (inv.tmp !== undefined) {
    const problem = tmpProblem(inv.tmp);
    if (problem) problems.push(problem);
  }
  if (inv.keepTmp !== undefined && typeof inv.keepTmp !== "boolean") problems.push("keepTmp must be a boolean");
  if (inv.answerOnly !== undefined && typeof inv.answerOnly !== "boolean") problems.push("answerOnly must be a boolean");
  if (problems.length) throw new InvalidInvocationError(`invalid invocation: ${problems.join("; ")}`);
}
