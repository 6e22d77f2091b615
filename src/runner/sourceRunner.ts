import type { EventStore } from "../store/eventStore.js";
import type { HttpResponse, InvocationMethod, InvocationOutcome, LogLine } from "../runtime/types.js";
import type { ComponentRuntime } from "./componentRuntime.js";
import type { LoadedComponent } from "./components.js";
import { loadRuntimeState, recordRunOutcome, type Loaded } from "./runtimeState.js";
import { openProps } from "../sources/configuredProps.js";
import type { Sealer } from "../secrets/sealer.js";
import type { Clock } from "../ids.js";
import type { Emit } from "./dedupe.js";
import type { EventEmitted } from "../../commands/emitters/emitter.js";
import { logsStream, type RunLogged, type RunTrigger } from "../../commands/emitters/runLog.js";

/** The parts of a source a run needs (from the read model or from a deploy in progress). */
export interface RunnableSource {
  readonly id: string;
  readonly creatorId: string;
  readonly storedProps: Record<string, unknown>;
  readonly endpointUrl: string;
}

export interface RunRequest {
  readonly source: RunnableSource;
  readonly component: LoadedComponent;
  readonly invocationId: string;
  readonly trigger: RunTrigger;
  readonly event?: unknown;
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

export interface Execution {
  readonly outcome: InvocationOutcome;
  readonly startedMs: number;
}

/** Log lines kept per run; the runtime already truncates floods and says so. */
const MAX_LOG_LINES = 500;

const methodOf = (trigger: RunTrigger): InvocationMethod =>
  trigger === "deploy" || trigger === "activate" || trigger === "deactivate" ? trigger : "run";

/**
 * Runs user code once and records what it did: its events (deduped) with its state in one append,
 * an error on $errors when it threw, and its log. A redelivered invocation that was already
 * recorded is not run again.
 */
export class SourceRunner {
  constructor(
    private readonly store: EventStore,
    private readonly runtime: ComponentRuntime,
    private readonly sealer: Sealer,
    private readonly clock: Clock,
  ) {}

  async run(request: RunRequest): Promise<RunResult> {
    const loaded = await loadRuntimeState(this.store, request.source.id);
    if (loaded.state.recentInvocations.includes(request.invocationId)) {
      return { outcome: emptyOutcome(), duplicate: true, emitted: [], response: undefined, position: undefined };
    }
    const execution = await this.execute(request, loaded.state.db);
    return this.record(request, execution, loaded);
  }

  /** Runs the code without recording anything (hooks are recorded only once all of them passed). */
  async execute(request: RunRequest, db: Record<string, unknown>): Promise<Execution> {
    const { source, component, invocationId, trigger } = request;
    const http = component.meta.component.props.find((p) => p.type === "$.interface.http");
    const startedMs = this.clock.now();
    const outcome = await this.runtime.invoke({
      invocationId,
      ownerId: source.creatorId,
      sourceId: source.id,
      codeHash: component.codeHash,
      bundleHash: component.meta.bundleHash,
      bundle: component.meta.bundle,
      method: methodOf(trigger),
      props: openProps(source.storedProps, this.sealer),
      event: request.event,
      db,
      ...(http ? { http: { endpoint: source.endpointUrl, customResponse: http.customResponse === true } } : {}),
    });
    return { outcome, startedMs };
  }

  /** Appends what an execution did: its events and state together, and beside them its log. */
  async record(request: RunRequest, { outcome, startedMs }: Execution, loaded?: Loaded): Promise<RunResult> {
    const { source, component, invocationId, trigger } = request;
    const emits: Emit[] = outcome.emits.map((e) => ({ event: e.event, meta: e.meta }));
    // Errors thrown by a source are emitted on its $errors channel, with what triggered the run.
    const errors: Emit[] = outcome.ok || !outcome.error ? [] : [{
      event: {
        error: { name: outcome.error.name, message: outcome.error.message, code: outcome.error.code, stack: outcome.error.stack ?? null },
        original_event: request.event ?? null,
        trigger,
        invocation_id: invocationId,
      },
      meta: { name: "$errors", summary: `${outcome.error.name}: ${outcome.error.message}`.slice(0, 200) },
    }];
    const recorded = await recordRunOutcome(this.store, {
      emitterId: source.id,
      invocationId,
      strategy: component.meta.component.dedupe,
      emits,
      unconditional: errors,
      db: outcome.db,
      dbChanged: outcome.dbChanged,
      startedMs,
      nowMs: this.clock.now(),
    }, {
      ...(loaded ? { loaded } : {}),
      alongside: (decision) => this.log(request, startedMs, outcome, decision.warnings),
    });
    if (recorded.decision.kind === "duplicate") {
      return { outcome, duplicate: true, emitted: [], response: undefined, position: undefined };
    }
    return { outcome, duplicate: false, emitted: recorded.emitted, response: outcome.response, position: recorded.position };
  }

  /** Records an invocation that could not be processed as a failed run (its state left as it was). */
  async park(request: RunRequest, error: { name: string; code: string; message: string }): Promise<RunResult> {
    const loaded = await loadRuntimeState(this.store, request.source.id);
    const outcome: InvocationOutcome = {
      ok: false, error, emits: [], logs: [], db: loaded.state.db, dbChanged: false, cpuMs: 0, wallMs: 0, warm: false,
    };
    return this.record(request, { outcome, startedMs: this.clock.now() }, loaded);
  }

  async logSkipped(request: Pick<RunRequest, "invocationId" | "trigger">, source: { id: string; creatorId: string }): Promise<number> {
    const result = await this.store.append(logsStream(source.id), [skippedRunLog(request, source, "paused", this.clock.now())]);
    return result.position;
  }

  async log(request: RunRequest, startedMs: number, outcome: InvocationOutcome, warnings: readonly string[]): Promise<number> {
    const endedMs = this.clock.now();
    const lines: LogLine[] = [
      { ts: startedMs, level: "system", message: `${request.trigger} run ${request.invocationId} started` },
      ...outcome.logs.slice(0, MAX_LOG_LINES),
      ...(outcome.logs.length > MAX_LOG_LINES
        ? [{ ts: endedMs, level: "system" as const, message: `${outcome.logs.length - MAX_LOG_LINES} more log lines were dropped` }]
        : []),
      ...warnings.map((message) => ({ ts: endedMs, level: "warn" as const, message })),
      ...(outcome.error ? [{ ts: endedMs, level: "error" as const, message: `${outcome.error.name}: ${outcome.error.message}` }] : []),
      {
        ts: endedMs,
        level: "system",
        message: `${request.trigger} run ${request.invocationId} ended ${outcome.ok ? "ok" : "with an error"} in ${Math.round(outcome.wallMs)} ms`,
      },
    ];
    const event: RunLogged = {
      type: "RunLogged",
      data: {
        sourceId: request.source.id,
        invocationId: request.invocationId,
        trigger: request.trigger,
        userId: request.source.creatorId,
        startedMs,
        endedMs,
        // Compute time is run time (wall clock), as users are billed for it.
        computeMs: Math.round(outcome.wallMs),
        ok: outcome.ok,
        error: outcome.error ? { name: outcome.error.name, message: outcome.error.message, ...(outcome.error.stack ? { stack: outcome.error.stack } : {}) } : null,
        lines,
      },
    };
    const result = await this.store.append(logsStream(request.source.id), [event]);
    return result.position;
  }
}

/** The log of an invocation that was dropped without running: the user sees why, the admission slot is freed. */
export function skippedRunLog(request: Pick<RunRequest, "invocationId" | "trigger">, source: { id: string; creatorId: string }, reason: "paused", nowMs: number): RunLogged {
  return {
    type: "RunLogged",
    data: {
      sourceId: source.id,
      invocationId: request.invocationId,
      trigger: request.trigger,
      userId: source.creatorId,
      startedMs: nowMs,
      endedMs: nowMs,
      computeMs: 0,
      ok: false,
      error: { name: "SourcePaused", message: "the source was paused when this invocation's turn came; it was not run" },
      lines: [{ ts: nowMs, level: "system", message: `${request.trigger} invocation ${request.invocationId} skipped: the source is paused` }],
      skipped: reason,
    },
  };
}

function emptyOutcome(): InvocationOutcome {
  return { ok: true, emits: [], logs: [], db: {}, dbChanged: false, cpuMs: 0, wallMs: 0, warm: false };
}
