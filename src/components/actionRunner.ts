// Running one action: its run() in the sandbox, then what it asked to send. `runAction` is the
// step the workflow runner calls; `ManualActionRuns` runs an action by hand for a caller
// (POST /v1/components/{id}/run): admitted and billed like a manual source run, and logged.
import { runLogged } from "../../commands/runLogs/runLog.js";
import type { RunLogged } from "../../commands/runLogs/runLog.js";
import type { ComponentRuntime } from "../runtime/componentRuntime.js";
import type { InvocationOutcome, NormalizedProp, Send, TmpEntry } from "../runtime/types.js";
import type { Destinations, SendResult } from "../destinations/destinations.js";
import { newId, type Clock } from "../ids.js";
import { actionProps, type ActionPropsDeps } from "./actionProps.js";
import type { LoadedComponent } from "./componentCache.js";

export interface ActionRunnerDeps {
  readonly runtime: Pick<ComponentRuntime, "invoke">;
  readonly destinations: Pick<Destinations, "perform">;
  readonly clock: Clock;
}

export interface ActionRunRequest {
  readonly component: LoadedComponent;
  /** Checked props (actionProps): defaults applied, secrets opened. */
  readonly props: Record<string, unknown>;
  /** The props its additionalProps() added for them (actionProps), bound by their type. */
  readonly additionalProps?: readonly NormalizedProp[];
  /** What run({ steps }) sees: earlier steps' results in a workflow, {} by hand. */
  readonly steps?: Record<string, unknown>;
  readonly invocationId: string;
  /** Tenancy of the sandbox (user or org). */
  readonly ownerId: string;
  /** Where $.send.email goes; null: an email send fails. */
  readonly ownerEmail: string | null;
  /** The component, workflow or step running it: names the warm isolate and tags what is sent. */
  readonly emitterId: string;
  /** A shorter wall-clock limit than the node's run timeout (a workflow's remaining time). */
  readonly timeoutMs?: number;
  /** A workflow step: what the previous step left in /tmp. */
  readonly tmp?: readonly TmpEntry[];
  /** A workflow step with a later step: answer what this one leaves in /tmp (outcome.tmp). */
  readonly keepTmp?: boolean;
}

export interface ActionRun {
  readonly outcome: InvocationOutcome;
  /** One result per outcome.sends item, in order: performed when the run succeeded, else "not sent". */
  readonly sends: SendResult[];
}

/**
 * Runs the action's run() once. Its sends are performed only when the run succeeded (or ended
 * with $.flow.exit); a failed send fails the action (error code SEND_FAILED, naming where it
 * went). A failed run's sends are reported as not sent. Never rejects for the action's failures.
 */
export async function runAction(deps: ActionRunnerDeps, request: ActionRunRequest): Promise<ActionRun> {
  const { component } = request;
  const outcome = await deps.runtime.invoke({
    invocationId: request.invocationId,
    ownerId: request.ownerId,
    sourceId: request.emitterId,
    codeHash: component.codeHash,
    bundleHash: component.meta.bundleHash,
    bundle: component.meta.bundle,
    method: "run",
    props: request.props,
    ...(request.additionalProps && request.additionalProps.length > 0 ? { additionalProps: request.additionalProps } : {}),
    steps: request.steps ?? {},
    db: {},
    ...(request.timeoutMs !== undefined ? { limits: { timeoutMs: request.timeoutMs } } : {}),
    ...(request.tmp !== undefined && request.tmp.length > 0 ? { tmp: request.tmp } : {}),
    ...(request.keepTmp === true ? { keepTmp: true } : {}),
  });
  const wanted = outcome.sends ?? [];
  if (wanted.length === 0) return { outcome, sends: [] };
  if (!outcome.ok) return { outcome, sends: wanted.map((s) => ({ kind: s.kind, ok: false, error: "not sent: the run failed" })) };
  const sends = await deps.destinations.perform(wanted, {
    ownerEmail: request.ownerEmail,
    emitterId: request.emitterId,
    invocationId: request.invocationId,
    nowMs: deps.clock.now(),
  });
  const failed = sends.map((result, i) => ({ result, send: wanted[i] })).filter(({ result }) => !result.ok);
  if (failed.length === 0) return { outcome, sends };
  const first = failed[0];
  const more = failed.length > 1 ? ` (and ${failed.length - 1} more failed send${failed.length > 2 ? "s" : ""})` : "";
  const { returnValue: _r, exports: _e, exited: _x, ...rest } = outcome;
  return {
    outcome: {
      ...rest,
      ok: false,
      error: {
        name: "SendError",
        code: "SEND_FAILED",
        message: `$.send.${first.send.kind} ${target(first.send, first.result)} failed: ${first.result.error ?? "no detail"}${more}`,
      },
    },
    sends,
  };
}

/** Where a send went, for people. */
function target(send: Send, result: SendResult): string {
  if (send.kind === "http") return `${send.method} ${send.url}`;
  if (send.kind === "s3")
    return `to s3://${send.bucket}/${typeof result.detail?.["key"] === "string" ? result.detail["key"] : send.prefix}`;
  return `"${send.subject}"`;
}

/** Admission of a by-hand run: the quota and back-pressure rules of manual source runs (src/runner/admission.ts). */
export interface RunAdmission {
  admit(input: { invocationId: string; sourceId: string; ownerId: string; bytes: number }): void;
  release(invocationId: string): void;
}

export interface ManualActionRunsDeps extends ActionRunnerDeps, ActionPropsDeps {
  readonly admission: RunAdmission;
  /** Appends the run's log, which is what usage and quotas count. */
  readonly appendRunLog: (logged: RunLogged) => Promise<number | undefined>;
  /** The user's email address, where $.send.email goes. */
  readonly emailOf: (userId: string) => string | null;
}

export interface ManualActionRun extends ActionRun {
  readonly invocationId: string;
  /** Log position of the run's log: the caller's read models include the run once past it. */
  readonly position: number | undefined;
}

export class ManualActionRuns {
  constructor(private readonly deps: ManualActionRunsDeps) {}

  /**
   * Checks the props (problems under `body.props`), admits the run as an invocation billed to
   * `userId` (quota_exceeded, backlog_full), runs it, performs its sends and logs it. The run's
   * log (logs-<component id>) keeps what usage counts but not the console lines: a registry
   * component's log is shared by everyone who runs it, and the lines are in the answer.
   */
  async run(input: {
    component: LoadedComponent;
    configured: Record<string, unknown>;
    steps?: Record<string, unknown>;
    ownerId: string;
    userId: string;
  }): Promise<ManualActionRun> {
    const { component, userId } = input;
    const props = await actionProps(this.deps, component, input.configured, { ownerId: input.ownerId, pathPrefix: "body.props" });
    const invocationId = newId("inv");
    const bytes = Buffer.byteLength(JSON.stringify({ props: input.configured, steps: input.steps ?? {} })) + 1024;
    this.deps.admission.admit({ invocationId, sourceId: component.id, ownerId: userId, bytes });
    try {
      const startedMs = this.deps.clock.now();
      const ran = await runAction(this.deps, {
        component,
        props: props.values,
        additionalProps: props.added,
        ...(input.steps ? { steps: input.steps } : {}),
        invocationId,
        ownerId: input.ownerId,
        ownerEmail: this.deps.emailOf(userId),
        emitterId: component.id,
      });
      const { outcome } = ran;
      const error = outcome.error ? { name: outcome.error.name, message: outcome.error.message } : null;
      const position = await this.deps.appendRunLog(
        runLogged({
          sourceId: component.id,
          invocationId,
          trigger: "manual",
          userId,
          startedMs,
          endedMs: this.deps.clock.now(),
          wallMs: outcome.wallMs,
          ok: outcome.ok,
          error,
          lines: [],
          warnings: [],
        }),
      );
      return { ...ran, invocationId, position };
    } catch (err) {
      // Never logged: its slot is freed here (a logged run frees it when the log is projected).
      this.deps.admission.release(invocationId);
      throw err;
    }
  }
}
