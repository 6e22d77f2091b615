// Running a workflow: its steps in order, each in the sandbox as an action with the `$` helper,
// `steps.<name>` carrying what earlier steps returned and exported, and /tmp what the step before
// left there (each step is its own invocation, maybe in another isolate or runner child). What a
// run leaves is recorded like a source's run, in one append: its emits (as {raw_event}) and, when a step threw, one
// event on $errors in the seed's shape; its log beside them. Workflow runs travel on their own
// topic, keyed by workflow id: one workflow's runs in order, workflows side by side.
import type { Bus, BusConsumer, BusRecord } from "../bus/bus.js";
import { answerRequest, replyJson, type ReplyChannel } from "../bus/reply.js";
import type { HttpResponse, InvocationOutcome, LogLine, TmpEntry } from "../runtime/types.js";
import type { Projector } from "../projector/projector.js";
import type { ComponentCache, LoadedComponent } from "../components/componentCache.js";
import type { EmitterStore } from "../../commands/emitters/emitterStore.js";
import type { Emit } from "../../commands/emitters/dedupe.js";
import type { RunLogStore } from "../../commands/runLogs/runLogStore.js";
import { runLogged, skippedRunLogged, type RunTrigger } from "../../commands/runLogs/runLog.js";
import { ERRORS_CHANNEL } from "../../commands/subscriptions/subscription.js";
import type { WorkflowStep } from "../../commands/workflows/workflow.js";
import type { Workflow, WorkflowsReadModel } from "../readModels/workflows.js";
import { openProps } from "../sources/configuredProps.js";
import type { Sealer } from "../secrets/sealer.js";
import { parseJson } from "../json/bounded.js";
import { OwnerSlots } from "../runner/ownerSlots.js";
import { deliveryOf } from "../runner/invocations.js";
import { alreadyRecorded, type Delivery } from "../../commands/emitters/emitter.js";
import { DomainError } from "../../commands/decider.js";
import type { Clock } from "../ids.js";
import { evaluate } from "./expressions.js";
import type { CheckedActionProps } from "../components/actionProps.js";

export const WORKFLOW_RUNS_TOPIC = "headwater.workflow-runs";
export const PLATFORM_VERSION = "0.1.0";

export type WorkflowTriggerKind = Extract<RunTrigger, "http" | "timer" | "manual" | "subscription">;

/** What the bus carries to a workflow runner. */
export interface WorkflowRunMessage {
  readonly invocationId: string;
  readonly workflowId: string;
  readonly trigger: WorkflowTriggerKind;
  readonly event: unknown;
  /** Log position the submitting node had projected: the runner's read models wait for it. */
  readonly minPosition: number;
  /** Emitters the triggering event passed through (runs made by subscriptions). */
  readonly chain?: readonly string[];
  readonly enqueuedMs: number;
  /** The id was minted for this one message (see InvocationMessage.uniqueToRecord). */
  readonly uniqueToRecord?: boolean;
}

export interface StepResult {
  readonly name: string;
  readonly cell_id: string;
  readonly ok: boolean;
  readonly return_value?: unknown;
  readonly exports?: Record<string, unknown>;
  readonly exited?: string | null;
}

/** The answer to a submitter that waits (an HTTP trigger answering with $.respond, a manual run). */
export interface WorkflowRunReply {
  readonly status: "done" | "duplicate" | "gone" | "paused";
  readonly ok?: boolean;
  readonly error?: { name: string; message: string; code: string; cellId: string | null };
  readonly response?: HttpResponse;
  readonly exited?: { reason: string | null; step: string };
  readonly steps?: StepResult[];
  readonly emitted?: { id: string; channel: string }[];
  readonly logs?: LogLine[];
  readonly position?: number;
}

export class WorkflowRunQueue {
  constructor(
    private readonly bus: Bus,
    private readonly replies: ReplyChannel,
  ) {}

  /** Durable once this resolves: the run will happen even if this node dies now. */
  async submit(message: WorkflowRunMessage): Promise<void> {
    await this.bus.publish(WORKFLOW_RUNS_TOPIC, [{ key: message.workflowId, value: JSON.stringify(message) }]);
  }

  async submitAndWait(message: WorkflowRunMessage, timeoutMs: number): Promise<WorkflowRunReply> {
    const reply = await this.replies.request(
      WORKFLOW_RUNS_TOPIC,
      { key: message.workflowId, value: JSON.stringify(message) },
      { timeoutMs },
    );
    return replyJson(reply) as WorkflowRunReply;
  }
}

/** Runs one step's action: the runtime call, and later whatever the action asked to send. */
export type StepExecutor = (request: {
  readonly workflow: Workflow;
  readonly step: WorkflowStep;
  readonly component: LoadedComponent;
  /** The step's props as actionProps checked them (values, and the props additionalProps() added). */
  readonly props: CheckedActionProps;
  readonly steps: Record<string, unknown>;
  /** What the previous step left in /tmp (the run's /tmp, 64 MB at most). */
  readonly tmp: readonly TmpEntry[];
  /** A later step follows: the outcome answers what this step leaves in /tmp. */
  readonly keepTmp: boolean;
  readonly invocationId: string;
  /** What is left of the run's time: the step gets no more. */
  readonly timeoutMs: number;
}) => Promise<InvocationOutcome>;

export interface WorkflowRunnerDeps {
  readonly emitters: EmitterStore;
  readonly runLogs: RunLogStore;
  readonly components: ComponentCache;
  readonly sealer: Sealer;
  readonly clock: Clock;
  readonly execute: StepExecutor;
  /** A whole run's wall-clock limit, shared by its steps (the node's run timeout). */
  readonly runTimeoutMs: number;
  /**
   * The action's props checked as for a run by hand (src/components/actionProps.ts): types, bounds,
   * options, defaults, additionalProps, connected accounts; secrets opened. Throws DomainError.
   */
  readonly actionProps: (
    component: LoadedComponent,
    configured: Record<string, unknown>,
    context: { ownerId: string; pathPrefix: string },
  ) => Promise<CheckedActionProps>;
}

const iso = (ms: number) => new Date(ms).toISOString();

const SOURCE_TYPES: Record<WorkflowTriggerKind, string> = { http: "HTTP", timer: "TIMER", manual: "MANUAL", subscription: "COMPONENT" };

export interface WorkflowRunResult {
  readonly reply: WorkflowRunReply;
}

export class WorkflowRunner {
  constructor(private readonly deps: WorkflowRunnerDeps) {}

  /** Runs a workflow once; `delivery` is the bus record it came in (a redelivery of a recorded run is skipped). */
  async run(workflow: Workflow, message: WorkflowRunMessage, delivery?: Delivery): Promise<WorkflowRunReply> {
    const loaded = await this.deps.emitters.load(workflow.id);
    if (alreadyRecorded(loaded.state, message.invocationId, delivery)) return { status: "duplicate" };
    const startedMs = this.deps.clock.now();
    const context = {
      id: message.invocationId,
      ts: iso(message.enqueuedMs),
      workflow_id: workflow.id,
      deployment_id: workflow.deploymentId,
      source_type: SOURCE_TYPES[message.trigger],
      verified: false,
      owner_id: workflow.ownerId,
      platform_version: PLATFORM_VERSION,
    };
    const steps: Record<string, unknown> = { trigger: { event: message.event ?? null, context } };
    // The run's /tmp, handed from step to step as `steps` is; a run starts with it empty.
    let tmp: readonly TmpEntry[] = [];
    const lines: LogLine[] = [];
    const emits: Emit[] = [];
    const results: StepResult[] = [];
    let response: HttpResponse | undefined;
    let failure: { step: WorkflowStep; error: { name: string; message: string; code: string; stack?: string } } | undefined;
    let exited: { reason: string | null; step: string } | undefined;

    const deadline = startedMs + this.deps.runTimeoutMs;
    for (const [index, step] of workflow.steps.entries()) {
      const component = this.deps.components.get(step.componentId);
      lines.push({ ts: this.deps.clock.now(), level: "system", message: `step ${step.name} (${step.cellId}) started` });
      let outcome: InvocationOutcome;
      try {
        if (!component) throw new DomainError("not_found", `the step's component ${step.componentId} is gone`);
        const props = await this.#props(workflow, step, component, steps, index);
        const timeoutMs = deadline - this.deps.clock.now();
        outcome =
          timeoutMs > 0
            ? await this.deps.execute({
                workflow,
                step,
                component,
                props,
                steps,
                tmp,
                keepTmp: index < workflow.steps.length - 1,
                invocationId: message.invocationId,
                timeoutMs,
              })
            : timedOut(this.deps.runTimeoutMs);
      } catch (error) {
        // Props that do not fit once their expressions are evaluated fail the step like a throw would.
        const configuration = error instanceof DomainError || (error as Error).name === "ConfigurationError";
        failure = {
          step,
          error: {
            name: configuration ? "ConfigurationError" : "Error",
            message: (error as Error).message ?? String(error),
            code: configuration ? "CONFIGURATION_ERROR" : "PLATFORM_ERROR",
          },
        };
        results.push({ name: step.name, cell_id: step.cellId, ok: false });
        break;
      }
      lines.push(...outcome.logs);
      // Emits made before a failure are kept, as on Pipedream (and for sources).
      for (const emit of outcome.emits) emits.push({ event: { raw_event: emit.event ?? null }, meta: emit.meta });
      if (outcome.response && !response) response = outcome.response;
      const exports = outcome.exports ?? {};
      if (typeof exports.$summary === "string")
        lines.push({ ts: this.deps.clock.now(), level: "system", message: `step ${step.name}: ${exports.$summary}` });
      if (!outcome.ok) {
        failure = {
          step,
          error: {
            name: outcome.error?.name ?? "Error",
            message: outcome.error?.message ?? "the step failed",
            code: outcome.error?.code ?? "USER_ERROR",
            ...(outcome.error?.stack ? { stack: outcome.error.stack } : {}),
          },
        };
        results.push({ name: step.name, cell_id: step.cellId, ok: false });
        break;
      }
      steps[step.name] = { $return_value: outcome.returnValue ?? null, ...exports };
      tmp = outcome.tmp ?? [];
      results.push({
        name: step.name,
        cell_id: step.cellId,
        ok: true,
        return_value: outcome.returnValue ?? null,
        exports,
        ...(outcome.exited ? { exited: outcome.exited.reason ?? null } : {}),
      });
      if (outcome.exited) {
        exited = { reason: outcome.exited.reason ?? null, step: step.name };
        lines.push({
          ts: this.deps.clock.now(),
          level: "system",
          message: `$.flow.exit in step ${step.name}${outcome.exited.reason ? `: ${outcome.exited.reason}` : ""}`,
        });
        break;
      }
    }

    const endedMs = this.deps.clock.now();
    const errors: Emit[] = failure ? [this.#errorEvent(message, context, failure, endedMs)] : [];
    const recorded = await this.deps.emitters.record(
      {
        emitterId: workflow.id,
        invocationId: message.invocationId,
        strategy: undefined,
        emits,
        unconditional: errors,
        db: loaded.state.db,
        dbChanged: false,
        startedMs,
        nowMs: endedMs,
        ...(message.chain ? { chain: message.chain } : {}),
        ...(delivery ? { delivery } : {}),
        ...(message.uniqueToRecord === true ? { uniqueToRecord: true } : {}),
      },
      {
        loaded,
        alongside: (decision) =>
          this.deps.runLogs.append(
            runLogged({
              sourceId: workflow.id,
              invocationId: message.invocationId,
              trigger: message.trigger,
              userId: workflow.creatorId,
              startedMs,
              endedMs,
              wallMs: endedMs - startedMs,
              ok: failure === undefined,
              error: failure ? { name: failure.error.name, message: `step ${failure.step.name}: ${failure.error.message}` } : null,
              lines,
              warnings: decision.warnings,
              chain: message.chain,
            }),
          ),
      },
    );
    if (recorded.decision.kind === "duplicate") return { status: "duplicate" };
    return {
      status: "done",
      ok: failure === undefined,
      ...(failure
        ? { error: { name: failure.error.name, message: failure.error.message, code: failure.error.code, cellId: failure.step.cellId } }
        : {}),
      ...(response ? { response } : {}),
      ...(exited ? { exited } : {}),
      steps: results,
      emitted: recorded.emitted.map((e) => ({ id: e.data.id, channel: e.data.channel })),
      logs: lines,
      ...(recorded.position !== undefined ? { position: recorded.position } : {}),
    };
  }

  /** A run that was not started (the workflow is paused): logged, not billed. */
  async logSkipped(workflow: Workflow, message: WorkflowRunMessage): Promise<number | undefined> {
    return this.deps.runLogs.append(
      skippedRunLogged({
        sourceId: workflow.id,
        userId: workflow.creatorId,
        invocationId: message.invocationId,
        trigger: message.trigger,
        nowMs: this.deps.clock.now(),
        chain: message.chain,
      }),
    );
  }

  /** The step's props: stored secrets opened, expressions evaluated against `steps`, then checked as the action's props. */
  async #props(
    workflow: Workflow,
    step: WorkflowStep,
    component: LoadedComponent,
    steps: Record<string, unknown>,
    index: number,
  ): Promise<CheckedActionProps> {
    const evaluated = evaluate(openProps(step.props, this.deps.sealer), steps) as Record<string, unknown>;
    // An expression that finds nothing leaves the prop unset: its default, or "is required".
    const given = Object.fromEntries(Object.entries(evaluated).filter(([, value]) => value !== undefined));
    return this.deps.actionProps(component, given, { ownerId: workflow.ownerId, pathPrefix: `steps[${index}].props` });
  }

  /** The seed's workflow error: original_event, original_context, error {code, cellId, ts, stack}. */
  #errorEvent(
    message: WorkflowRunMessage,
    context: Record<string, unknown>,
    failure: { step: WorkflowStep; error: { name: string; message: string; code: string; stack?: string } },
    nowMs: number,
  ): Emit {
    const { error, step } = failure;
    const headline = `${error.name}: ${error.message}`;
    const stack = error.stack && error.stack.includes(error.message) ? error.stack : `${headline}${error.stack ? `\n${error.stack}` : ""}`;
    return {
      event: {
        original_event: message.event ?? null,
        original_context: context,
        error: { code: error.code, cellId: step.cellId, ts: iso(nowMs), stack },
      },
      meta: { name: ERRORS_CHANNEL, summary: `step ${step.name}: ${headline}`.slice(0, 200) },
    };
  }
}

export interface WorkflowConsumerDeps {
  readonly bus: Bus;
  readonly replies: ReplyChannel;
  readonly projector: Pick<Projector, "waitFor">;
  readonly workflows: WorkflowsReadModel;
  readonly runner: WorkflowRunner;
  readonly runsPerOwner: number;
}

/** Attempts of one run (each retried by the bus) before it is recorded as failed and the partition moves on. */
const PARK_AFTER_ATTEMPTS = 6;

/** The runner role for workflows: consumes workflow runs, runs them, answers those that carry a reply address. */
export async function startWorkflowRunner(deps: WorkflowConsumerDeps): Promise<BusConsumer> {
  const failures = new Map<string, number>();
  const owners = new OwnerSlots(deps.runsPerOwner);

  async function handle(record: BusRecord, message: WorkflowRunMessage): Promise<void> {
    let reply: WorkflowRunReply;
    const workflow = deps.workflows.workflow(message.workflowId);
    try {
      if (!workflow) reply = { status: "gone" };
      else if (!workflow.active && message.trigger !== "manual") {
        const position = await deps.runner.logSkipped(workflow, message);
        reply = { status: "paused", ...(position !== undefined ? { position } : {}) };
      } else reply = await deps.runner.run(workflow, message, deliveryOf(record));
      failures.delete(message.invocationId);
    } catch (error) {
      const attempts = (failures.get(message.invocationId) ?? 0) + 1;
      failures.set(message.invocationId, attempts);
      if (attempts < PARK_AFTER_ATTEMPTS || !workflow) throw error;
      console.error(`workflow runner: run ${message.invocationId} of ${message.workflowId} dropped after ${attempts} attempts:`, error);
      failures.delete(message.invocationId);
      reply = {
        status: "done",
        ok: false,
        error: { name: "InvocationParked", message: String((error as Error).message ?? error), code: "PARKED", cellId: null },
      };
    }
    await answerRequest(deps.bus, deps.replies, record, reply);
  }

  return deps.bus.consume({
    groupId: "headwater.workflow-runners",
    topics: [WORKFLOW_RUNS_TOPIC],
    keyed: {
      handler: async (records) => {
        const work = records.map((record) => ({ record, message: readRun(record) }));
        await deps.projector.waitFor(Math.max(0, ...work.map((w) => w.message?.minPosition ?? 0)));
        const owner = deps.workflows.workflow(records[0].key)?.creatorId ?? "";
        await owners.acquire(owner);
        try {
          for (const { record, message } of work) if (message) await handle(record, message);
        } finally {
          owners.release(owner);
        }
      },
    },
  });
}

/** A step that had no time left: the run's timeout is shared by its steps. */
function timedOut(runTimeoutMs: number): InvocationOutcome {
  return {
    ok: false,
    error: { name: "TimeoutError", code: "TIMEOUT", message: `the workflow ran out of its ${runTimeoutMs} ms before this step started` },
    emits: [],
    logs: [],
    db: {},
    dbChanged: false,
    cpuMs: 0,
    wallMs: 0,
    warm: false,
  };
}

function readRun(record: BusRecord): WorkflowRunMessage | undefined {
  try {
    const message = parseJson(record.value.toString("utf8")) as WorkflowRunMessage;
    if (typeof message?.invocationId === "string" && typeof message.workflowId === "string") return message;
  } catch {
    // reported below
  }
  console.error(`workflow runner: dropped an unreadable message at ${record.topic}[${record.partition}]@${record.offset}`);
  return undefined;
}
