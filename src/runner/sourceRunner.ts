import type { HttpResponse, Invocation, InvocationMethod, InvocationOutcome, NormalizedProp } from "../runtime/types.js";
import type { ComponentRuntime } from "../runtime/componentRuntime.js";
import type { LoadedComponent } from "../components/componentCache.js";
import type { EmitterStore, LoadedEmitter } from "../../commands/emitters/emitterStore.js";
import type { RunLogStore } from "../../commands/runLogs/runLogStore.js";
import { runLogged, skippedRunLogged, type RunLogged, type RunTrigger } from "../../commands/runLogs/runLog.js";
import type { Emit } from "../../commands/emitters/dedupe.js";
import { alreadyRecorded, type Delivery, type EventEmitted, type RecordRun } from "../../commands/emitters/emitter.js";
import { MissingAccountError, openPropsWithAccounts } from "../sources/configuredProps.js";
import type { Sealed, Sealer } from "../secrets/sealer.js";
import { newId, type Clock } from "../ids.js";
import { ADDITIONAL_PROPS_TIMEOUT_MS, httpInterface } from "../components/additionalProps.js";

/** The parts of a source a run needs (from the read model or from a deploy in progress). */
export interface RunnableSource {
  readonly id: string;
  readonly creatorId: string;
  readonly storedProps: Record<string, unknown>;
  readonly endpointUrl: string;
  /** The props its component's additionalProps() added for it (its HTTP interface or timer among them). */
  readonly additionalProps?: readonly NormalizedProp[];
}

/** What an invocation of the source's code carries besides the component: its HTTP interface, the props additionalProps() added. */
function sourceInvocation(source: RunnableSource, component: LoadedComponent): Pick<Invocation, "http" | "additionalProps"> {
  const http = httpInterface(component.meta.component.props, source.additionalProps);
  return {
    ...(http ? { http: { endpoint: source.endpointUrl, customResponse: http.customResponse } } : {}),
    ...(source.additionalProps && source.additionalProps.length > 0 ? { additionalProps: source.additionalProps } : {}),
  };
}

export interface RunRequest {
  readonly source: RunnableSource;
  readonly component: LoadedComponent;
  readonly invocationId: string;
  readonly trigger: RunTrigger;
  readonly event?: unknown;
  /** The triggering event's chain of emitters: the events this run emits carry it on. */
  readonly chain?: readonly string[];
  /** The bus record the invocation came in (a redelivery of a recorded one is not run again). */
  readonly delivery?: Delivery;
  /** Its id was minted for that one record (see RecordRun.uniqueToRecord). */
  readonly uniqueToRecord?: boolean;
  /** It came in no bus record (see RecordRun.local). */
  readonly local?: boolean;
}

export interface RunResult {
  readonly outcome: InvocationOutcome;
  readonly duplicate: boolean;
  readonly emitted: EventEmitted[];
  /** The custom HTTP response, if the run gave one. */
  readonly response: HttpResponse | undefined;
  /** Log position of the last append of the run (its events and log). */
  readonly position: number | undefined;
}

/** A batch that ran in the sandbox and is recorded (or being recorded). */
export interface StartedBatch {
  /** The `this.db` the batch's runs left: the source's next batch runs on it. */
  readonly db: Record<string, unknown>;
  /** One result per request, once the batch is recorded (after the batch before it). */
  readonly recorded: Promise<RunResult[]>;
}

export interface Execution {
  readonly outcome: InvocationOutcome;
  readonly startedMs: number;
}

/**
 * How long a source's batch has been in the sandbox before a request to it waiting in turn is also
 * run beside it (SourceRunner.besideIfLong): far past a run that computes, so only a batch that
 * waits (on the network) sees it.
 */
export const BESIDE_AFTER_MS = 1_000;
/**
 * At most this many requests wait to run beside one batch (the first to arrive): a handshake is
 * one request, and a busy source with slow runs should not have every request it gets run twice.
 */
export const MAX_BESIDE_PER_BATCH = 16;

/** A request to a source whose batch is in the sandbox, waiting to be run beside it should the batch last. */
interface BesideWaiter {
  readonly invocationId: string;
  readonly event: unknown;
  resolve(outcome: InvocationOutcome | undefined): void;
}

/** A source's batch in the sandbox now: since when, on which db, and the requests waiting beside it. */
interface InSandbox {
  readonly since: number;
  readonly db: Record<string, unknown>;
  readonly source: RunnableSource;
  readonly component: LoadedComponent;
  readonly waiters: BesideWaiter[];
  timer: NodeJS.Timeout | undefined;
  running: boolean;
  /** How many requests ran beside it so far (MAX_BESIDE_PER_BATCH). */
  ran: number;
}

const methodOf = (trigger: RunTrigger): InvocationMethod =>
  trigger === "deploy" || trigger === "activate" || trigger === "deactivate" ? trigger : "run";

/**
 * Runs user code once and records what it did: its events (deduped) with its state in one append,
 * an error on $errors when it threw, and its log. A redelivered invocation that was already
 * recorded is not run again.
 */
export class SourceRunner {
  /** By source id: the batch each source has in the sandbox now (see besideIfLong). */
  readonly #inSandbox = new Map<string, InSandbox>();

  constructor(
    private readonly emitters: EmitterStore,
    private readonly runLogs: RunLogStore,
    private readonly runtime: ComponentRuntime,
    private readonly sealer: Sealer,
    private readonly clock: Clock,
    /** The sealed credentials of a connected account a source binds (undefined once deleted). */
    private readonly accountAuth: (accountId: string) => Promise<Sealed | undefined> = async () => undefined,
  ) {}

  async run(request: RunRequest): Promise<RunResult> {
    const loaded = await this.emitters.loadCached(request.source.id);
    if (alreadyRecorded(loaded.state, request.invocationId, request.delivery)) {
      return { outcome: emptyOutcome(), duplicate: true, emitted: [], response: undefined, position: undefined };
    }
    const execution = await this.execute(request, loaded.state.db);
    return this.record(request, execution, loaded);
  }

  /**
   * Runs a batch of one source's invocations (same component, in order) with one sandbox entry
   * and records them with one append of their events and state (and one of their logs). The
   * emitter state comes from memory when it is still current. Each run keeps its own outcome: a
   * failing or timed-out run becomes its own $errors event and the others are kept. Throws only
   * when the batch could not be run or recorded at all (nothing of it was recorded then).
   */
  async runBatch(requests: readonly RunRequest[]): Promise<RunResult[]> {
    return (await this.startBatch(requests)).recorded;
  }

  /**
   * Runs a batch in the sandbox now and records it once `previous` (the source's batch before
   * it, which may still be being recorded) is, so that a source's next batch runs while the one
   * before is made durable. It runs on the `this.db` `previous` left. Should the recorded state
   * differ from that (a run of `previous` turned out to be an already recorded redelivery), the
   * batch is run again on the recorded state before it is recorded. If `previous` fails, this
   * batch fails too, unrecorded. Resolves once the batch ran; `recorded` once it is recorded.
   */
  async startBatch(requests: readonly RunRequest[], previous?: StartedBatch): Promise<StartedBatch> {
    const sourceId = requests[0].source.id;
    // With a batch still being recorded before it, redeliveries are told when this one is recorded.
    const initial = previous === undefined ? await this.emitters.loadCached(sourceId) : undefined;
    const seen = new Set(initial?.state.recentInvocations);
    const fresh: number[] = [];
    requests.forEach((request, i) => {
      if (seen.has(request.invocationId) || (initial && alreadyRecorded(initial.state, request.invocationId, request.delivery))) return;
      seen.add(request.invocationId);
      fresh.push(i);
    });
    const results: RunResult[] = requests.map(() => ({
      outcome: emptyOutcome(),
      duplicate: true,
      emitted: [],
      response: undefined,
      position: undefined,
    }));
    const startDb = previous?.db ?? initial!.state.db;
    if (fresh.length === 0) return { db: startDb, recorded: Promise.resolve(results) };
    const toRun = fresh.map((i) => requests[i]);
    const executions = await this.executeBatch(toRun, startDb);
    const recorded = (async (): Promise<RunResult[]> => {
      if (previous) await previous.recorded;
      const loaded = initial ?? (await this.emitters.loadCached(sourceId));
      if (loaded.state.db !== startDb && JSON.stringify(loaded.state.db) !== JSON.stringify(startDb)) {
        return (await this.startBatch(requests)).recorded;
      }
      return this.recordExecuted(toRun, executions, loaded, fresh, results);
    })();
    // Awaited by whoever holds the batch; marked handled so a failure seen late is not "unhandled".
    recorded.catch(() => undefined);
    const last = executions[executions.length - 1];
    return { db: last.outcome.db, recorded };
  }

  /** Records a batch's executions with one append (and one of their logs) on the state `loaded`. */
  private async recordExecuted(
    toRun: readonly RunRequest[],
    executions: readonly Execution[],
    loaded: LoadedEmitter,
    fresh: readonly number[],
    results: RunResult[],
  ): Promise<RunResult[]> {
    const commands: RecordRun[] = toRun.map((request, i) => this.recordCommand(request, executions[i]));
    const recorded = await this.emitters.recordBatch(commands, {
      loaded,
      alongside: (decisions) => {
        const endedMs = this.clock.now();
        const logs = decisions.flatMap((decision, i) =>
          decision.kind === "duplicate" ? [] : [this.logOf(toRun[i], executions[i], endedMs, decision.warnings)],
        );
        return this.runLogs.appendMany(logs);
      },
    });
    recorded.decisions.forEach((decision, i) => {
      if (decision.kind === "duplicate") return;
      results[fresh[i]] = {
        outcome: executions[i].outcome,
        duplicate: false,
        emitted: decision.kind === "emits" ? decision.emitted : [],
        response: executions[i].outcome.response,
        position: recorded.position,
      };
    });
    return results;
  }

  /** The props a run gets (secrets opened, connected accounts bound), or the outcome of a run that cannot get them. */
  private async propsOf(
    source: RunnableSource,
    db: Record<string, unknown>,
  ): Promise<{ open: Record<string, unknown> } | { failed: InvocationOutcome }> {
    try {
      return { open: await openPropsWithAccounts(source.storedProps, this.sealer, this.accountAuth) };
    } catch (error) {
      if (!(error instanceof MissingAccountError)) throw error;
      // Its account was deleted after it was bound: the run fails as a component's configuration error would.
      return { failed: failedBeforeRunning(error, "CONFIGURATION_ERROR", db) };
    }
  }

  /** Runs a batch's code in the sandbox at once, each run on the db the previous one left; records nothing. */
  private async executeBatch(requests: readonly RunRequest[], db: Record<string, unknown>): Promise<Execution[]> {
    const { source, component } = requests[0];
    const startedMs = this.clock.now();
    const props = await this.propsOf(source, db);
    if ("failed" in props) return requests.map(() => ({ outcome: props.failed, startedMs }));
    const entry: InSandbox = { since: this.clock.now(), db, source, component, waiters: [], timer: undefined, running: false, ran: 0 };
    this.#inSandbox.set(source.id, entry);
    try {
      return await this.#invokeBatch(requests, props.open, db, startedMs);
    } finally {
      if (this.#inSandbox.get(source.id) === entry) this.#inSandbox.delete(source.id);
      clearTimeout(entry.timer);
      // Their turn comes now.
      for (const waiter of entry.waiters.splice(0)) waiter.resolve(undefined);
    }
  }

  async #invokeBatch(
    requests: readonly RunRequest[],
    props: Record<string, unknown>,
    db: Record<string, unknown>,
    startedMs: number,
  ): Promise<Execution[]> {
    const { source, component } = requests[0];
    const outcomes = await this.runtime.invokeBatch(
      requests.map((request, i) => ({
        invocationId: request.invocationId,
        ownerId: source.creatorId,
        sourceId: source.id,
        codeHash: component.codeHash,
        bundleHash: component.meta.bundleHash,
        bundle: component.meta.bundle,
        method: methodOf(request.trigger),
        props,
        event: request.event,
        ...(i === 0 ? { db } : {}),
        ...sourceInvocation(source, component),
      })),
    );
    // Each run started when the one before it ended (the batch ran them back to back).
    let at = startedMs;
    return outcomes.map((outcome) => {
      const execution = { outcome, startedMs: Math.round(at) };
      at += outcome.wallMs;
      return execution;
    });
  }

  /**
   * For a custom-response request just queued for a source whose batch is in the sandbox: should
   * that batch still be there BESIDE_AFTER_MS after it entered, the request is also run beside it.
   * In turn it would wait for the batch, and a provider that calls the source's endpoint before it
   * answers the run's call (Microsoft Graph validating a subscription the run creates) would wait
   * for the run, which waits for it, until the run's timeout.
   *
   * The run beside is answer-only (Invocation.answerOnly), in a place of its own, on the db the
   * batch started with. Resolves with its outcome when it only answered: a response, and no
   * emits, db writes, sends or outbound requests, so answering from it changes nothing the run in
   * turn would not. Else, or once the batch left the sandbox, with undefined. Nothing it did is
   * kept: the request still runs in turn, recorded and logged as any, and its answer goes to
   * whichever came first. Undefined at once when the source has no batch in the sandbox.
   */
  besideIfLong(sourceId: string, invocationId: string, event: unknown): Promise<InvocationOutcome | undefined> | undefined {
    const entry = this.#inSandbox.get(sourceId);
    if (!entry || entry.ran + entry.waiters.length >= MAX_BESIDE_PER_BATCH) return undefined;
    return new Promise((resolve) => {
      entry.waiters.push({ invocationId, event, resolve });
      if (entry.timer === undefined && !entry.running) {
        entry.timer = setTimeout(() => void this.#runBeside(entry), Math.max(0, entry.since + BESIDE_AFTER_MS - this.clock.now()));
        entry.timer.unref();
      }
    });
  }

  /** Runs the requests waiting beside a batch that lasted, one at a time, while it stays in the sandbox. */
  async #runBeside(entry: InSandbox): Promise<void> {
    entry.timer = undefined;
    entry.running = true;
    try {
      let waiter: BesideWaiter | undefined;
      while (this.#inSandbox.get(entry.source.id) === entry && (waiter = entry.waiters.shift())) {
        const { source, component } = entry;
        entry.ran++;
        const request: RunRequest = { source, component, invocationId: waiter.invocationId, trigger: "http", event: waiter.event };
        const outcome = await this.execute(request, entry.db, { place: "beside-run", answerOnly: true }).then(
          (execution) => execution.outcome,
          () => undefined,
        );
        const onlyAnswered =
          outcome?.response !== undefined &&
          outcome.emits.length === 0 &&
          !outcome.dbChanged &&
          outcome.reachedOut !== true &&
          (outcome.sends ?? []).length === 0;
        waiter.resolve(onlyAnswered ? outcome : undefined);
      }
    } finally {
      entry.running = false;
    }
  }

  /**
   * Runs the code without recording anything (hooks are recorded only once the command was
   * accepted). `place`: a request that arrived while the source's hooks run, or while a batch of
   * its runs waits, in a place of its own (the sandbox runs one source's invocations one at a time,
   * and they may be waiting for this one).
   */
  async execute(
    request: RunRequest,
    db: Record<string, unknown>,
    options: { place?: "beside-hooks" | "beside-run"; answerOnly?: boolean } = {},
  ): Promise<Execution> {
    const { source, component, invocationId, trigger } = request;
    const startedMs = this.clock.now();
    const props = await this.propsOf(source, db);
    if ("failed" in props) return { outcome: props.failed, startedMs };
    const outcome = await this.runtime.invoke({
      invocationId,
      ownerId: source.creatorId,
      sourceId: options.place ? `${source.id}#${options.place}` : source.id,
      codeHash: component.codeHash,
      bundleHash: component.meta.bundleHash,
      bundle: component.meta.bundle,
      method: methodOf(trigger),
      props: props.open,
      event: request.event,
      db,
      ...(options.answerOnly ? { answerOnly: true } : {}),
      ...sourceInvocation(source, component),
    });
    return { outcome, startedMs };
  }

  /**
   * Calls the component's additionalProps() for a source being deployed or updated, with its own
   * props' values (`source.storedProps`, secrets and accounts opened) and `this.db` as it is:
   * records nothing (it is no run), answers what it described.
   */
  async describeAdditionalProps(
    source: RunnableSource,
    component: LoadedComponent,
    db: Record<string, unknown>,
  ): Promise<InvocationOutcome> {
    const props = await this.propsOf(source, db);
    if ("failed" in props) return props.failed;
    return this.runtime.invoke({
      invocationId: newId("inv"),
      ownerId: source.creatorId,
      sourceId: source.id,
      codeHash: component.codeHash,
      bundleHash: component.meta.bundleHash,
      bundle: component.meta.bundle,
      method: "additionalProps",
      props: props.open,
      db,
      limits: { timeoutMs: ADDITIONAL_PROPS_TIMEOUT_MS },
      ...sourceInvocation(source, component),
    });
  }

  /** What an execution did, as the emitter's RecordRun command: its emits, and its error on $errors. */
  private recordCommand(request: RunRequest, { outcome, startedMs }: Execution): RecordRun {
    const { source, component, invocationId, trigger } = request;
    const emits: Emit[] = outcome.emits.map((e) => ({ event: e.event, meta: e.meta }));
    // Errors thrown by a source are emitted on its $errors channel, with what triggered the run.
    const errors: Emit[] =
      outcome.ok || !outcome.error
        ? []
        : [
            {
              event: {
                error: {
                  name: outcome.error.name,
                  message: outcome.error.message,
                  code: outcome.error.code,
                  stack: outcome.error.stack ?? null,
                },
                original_event: request.event ?? null,
                trigger,
                invocation_id: invocationId,
              },
              meta: { name: "$errors", summary: `${outcome.error.name}: ${outcome.error.message}`.slice(0, 200) },
            },
          ];
    return {
      emitterId: source.id,
      invocationId,
      strategy: component.meta.component.dedupe,
      emits,
      unconditional: errors,
      db: outcome.db,
      dbChanged: outcome.dbChanged,
      startedMs,
      nowMs: this.clock.now(),
      ...(request.chain ? { chain: request.chain } : {}),
      ...(request.delivery ? { delivery: request.delivery } : {}),
      ...(request.uniqueToRecord ? { uniqueToRecord: true } : {}),
      ...(request.local ? { local: true } : {}),
    };
  }

  private logOf(request: RunRequest, { outcome, startedMs }: Execution, endedMs: number, warnings: readonly string[]): RunLogged {
    const error = outcome.error
      ? { name: outcome.error.name, message: outcome.error.message, ...(outcome.error.stack ? { stack: outcome.error.stack } : {}) }
      : null;
    return runLogged({
      sourceId: request.source.id,
      invocationId: request.invocationId,
      trigger: request.trigger,
      userId: request.source.creatorId,
      startedMs,
      endedMs: Math.max(endedMs, Math.round(startedMs + outcome.wallMs)),
      wallMs: outcome.wallMs,
      ok: outcome.ok,
      error,
      lines: outcome.logs,
      warnings,
      chain: request.chain,
    });
  }

  /** Appends what an execution did: its events and state together, and beside them its log. */
  async record(request: RunRequest, execution: Execution, loaded?: LoadedEmitter): Promise<RunResult> {
    const { outcome } = execution;
    const recorded = await this.emitters.record(this.recordCommand(request, execution), {
      ...(loaded ? { loaded } : {}),
      alongside: (decision) => this.runLogs.append(this.logOf(request, execution, this.clock.now(), decision.warnings)),
    });
    if (recorded.decision.kind === "duplicate") {
      return { outcome, duplicate: true, emitted: [], response: undefined, position: undefined };
    }
    return { outcome, duplicate: false, emitted: recorded.emitted, response: outcome.response, position: recorded.position };
  }

  /** Records an invocation that could not be processed as a failed run (its state left as it was). */
  async park(request: RunRequest, error: { name: string; code: string; message: string }): Promise<RunResult> {
    const loaded = await this.emitters.load(request.source.id);
    const outcome = failedBeforeRunning(error, error.code, loaded.state.db);
    return this.record(request, { outcome, startedMs: this.clock.now() }, loaded);
  }

  /**
   * Logs (and so bills) a run whose change was refused and is not recorded: a hook that failed a
   * deploy, update or delete. Its events and state are not kept; its log is, under the source's id.
   */
  async logRefused(request: RunRequest, execution: Execution): Promise<number | undefined> {
    return this.runLogs.append(this.logOf(request, execution, this.clock.now(), []));
  }

  /** Logs an invocation dropped without running (its source was paused meanwhile). */
  async logSkipped(
    request: Pick<RunRequest, "invocationId" | "trigger" | "chain">,
    source: { id: string; creatorId: string },
  ): Promise<number | undefined> {
    return this.runLogs.append(
      skippedRunLogged({
        sourceId: source.id,
        userId: source.creatorId,
        invocationId: request.invocationId,
        trigger: request.trigger,
        nowMs: this.clock.now(),
        chain: request.chain,
      }),
    );
  }
}

/** The outcome of a run that failed before its code ran (its state left as it was). */
function failedBeforeRunning(error: { name: string; message: string }, code: string, db: Record<string, unknown>): InvocationOutcome {
  return {
    ok: false,
    error: { name: error.name, message: error.message, code },
    emits: [],
    logs: [],
    db,
    dbChanged: false,
    cpuMs: 0,
    wallMs: 0,
    warm: false,
  };
}

function emptyOutcome(): InvocationOutcome {
  return { ok: true, emits: [], logs: [], db: {}, dbChanged: false, cpuMs: 0, wallMs: 0, warm: false };
}
