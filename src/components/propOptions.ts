// One page of a prop's options, as a user configuring a component needs them before deploying it:
// a static list as written, or the prop's `options` method run in the sandbox (POST
// /v1/components/{key_or_id}/props/{prop}/options). A method run is admitted, billed and logged
// like a manual run, under a shorter deadline.
import { DomainError } from "../../commands/decider.js";
import { runLogged, type RunLogged } from "../../commands/runLogs/runLog.js";
import { newId, type Clock } from "../ids.js";
import { check, type ActionPropsDeps } from "./actionProps.js";
import type { RunAdmission } from "./actionRunner.js";
import type { LoadedComponent } from "./componentCache.js";

/** An options method answers within this (a user waits on it in a form), or the node's run timeout if shorter. */
export const OPTIONS_TIMEOUT_MS = 30_000;

export interface PropOptionsDeps extends ActionPropsDeps {
  readonly admission: RunAdmission;
  readonly appendRunLog: (logged: RunLogged) => Promise<number | undefined>;
  readonly clock: Clock;
  readonly timeoutMs: number;
}

export interface OptionsPage {
  readonly options: { label: string; value: unknown }[];
  /** What the method returned as its context (pass it back as prev_context for the next page); null when none. */
  readonly context: unknown;
}

const asOption = (o: unknown, i: number): { label: string; value: unknown } => {
  if (typeof o === "string" || typeof o === "number" || typeof o === "boolean") return { label: String(o), value: o };
  if (typeof o === "object" && o !== null && !Array.isArray(o) && "value" in o) {
    const { label, value } = o as { label?: unknown; value: unknown };
    return { label: typeof label === "string" ? label : (JSON.stringify(label ?? value) ?? ""), value };
  }
  throw new DomainError("hook_failed", `options() returned an option that is neither a value nor {label, value} (at ${i})`);
};

export class PropOptions {
  constructor(private readonly deps: PropOptionsDeps) {}

  async page(input: {
    component: LoadedComponent;
    prop: string;
    configured: Record<string, unknown>;
    page: number;
    prevContext: unknown;
    ownerId: string;
    userId: string;
  }): Promise<OptionsPage> {
    const { component } = input;
    const props = component.meta.component.props;
    const prop = props.find((p) => p.name === input.prop);
    if (!prop) throw new DomainError("not_found", `the component has no prop ${JSON.stringify(input.prop)}`);
    if (Array.isArray(prop.options)) return { options: prop.options.map(asOption), context: null };
    if (prop.options !== "dynamic") {
      throw new DomainError("invalid_request", `the prop ${input.prop} has no options: any value of its type is accepted`, [
        { path: "params.prop", message: "has no options" },
      ]);
    }
    // The props configured so far (an options method often reads an app's $auth or an earlier choice).
    const given = props.filter((p) => Object.hasOwn(input.configured, p.name));
    const values = await check(this.deps, given, input.configured, { ownerId: input.ownerId, pathPrefix: "body.configured_props" });
    const invocationId = newId("inv");
    const bytes = Buffer.byteLength(JSON.stringify(input.configured)) + 1024;
    this.deps.admission.admit({ invocationId, sourceId: component.id, ownerId: input.userId, bytes });
    let outcome;
    const startedMs = this.deps.clock.now();
    try {
      outcome = await this.deps.runtime.invoke({
        invocationId,
        ownerId: input.ownerId,
        sourceId: component.id,
        codeHash: component.codeHash,
        bundleHash: component.meta.bundleHash,
        bundle: component.meta.bundle,
        method: "options",
        props: values,
        event: { prop: input.prop, page: input.page, prevContext: input.prevContext },
        db: {},
        limits: { timeoutMs: this.deps.timeoutMs },
      });
      const error = outcome.error ? { name: outcome.error.name, message: outcome.error.message } : null;
      await this.deps.appendRunLog(
        runLogged({
          sourceId: component.id,
          invocationId,
          trigger: "manual",
          userId: input.userId,
          startedMs,
          endedMs: this.deps.clock.now(),
          wallMs: outcome.wallMs,
          ok: outcome.ok,
          error,
          lines: [],
          warnings: [],
        }),
      );
    } catch (err) {
      // Never logged: its slot is freed here (a logged run frees it when the log is projected).
      this.deps.admission.release(invocationId);
      throw err;
    }
    if (!outcome.ok) {
      const e = outcome.error;
      const message = `the options() of ${input.prop} failed: ${e ? `${e.name}: ${e.message}` : "no detail"}`;
      throw new DomainError(e?.code === "TIMEOUT" ? "run_timeout" : "hook_failed", message);
    }
    const answer = outcome.returnValue as { options?: unknown; context?: unknown } | undefined;
    if (!answer || !Array.isArray(answer.options)) throw new DomainError("hook_failed", `the options() of ${input.prop} returned nothing`);
    return { options: answer.options.map(asOption), context: answer.context ?? null };
  }
}
