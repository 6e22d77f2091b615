// Deploying and deleting workflows. The rules are the workflow decider's (commands/workflows); this
// turns a definition into steps: each step's action saved (inline code and uploaded files become
// saved components, registry keys and sc_ ids are looked up), its static props checked and
// secrets sealed, then one WorkflowDeployed. The key (the definition's file name) is claimed in
// the owner's namespace, so deploying the same key again is a new version of the same workflow.
import type { EventStore } from "../store/eventStore.js";
import { CommandHandler, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import { workflow as workflowDecider, type WorkflowStep, type WorkflowTrigger } from "../../commands/workflows/workflow.js";
import { Names } from "../../commands/names/claims.js";
import { emitterDataStreams, streams } from "../../commands/streams.js";
import { DomainError, type ProblemDetail } from "../../commands/decider.js";
import { REGISTRY_OWNER } from "../../commands/components/component.js";
import type { ComponentCatalog, Unsaved } from "../components/catalog.js";
import type { LoadedComponent } from "../components/componentCache.js";
import type { Workflow, WorkflowsReadModel } from "../readModels/workflows.js";
import { checkConfiguredProps, checkTimerValue, type PropRules } from "../sources/configuredProps.js";
import type { Sealer } from "../secrets/sealer.js";
import { slugify } from "../slug.js";
import { endpointToken, newId, type Clock } from "../ids.js";
import { isFilePath, triggerOf, type StepDefinition, type WorkflowDefinition } from "./definition.js";
import { expressionProblems, hasExpression } from "./expressions.js";
import type { ConnectedAccounts } from "../connectedAccounts/connectedAccounts.js";

export interface WorkflowServiceDeps {
  readonly store: EventStore;
  readonly catalog: ComponentCatalog;
  readonly workflows: WorkflowsReadModel;
  readonly sealer: Sealer;
  readonly clock: Clock;
  readonly rules: PropRules;
  /** Read-your-writes: waits until this node's read models include a log position. */
  readonly waitFor: (position: number) => Promise<void>;
  /** Checks the connected accounts app props bind (the owner's, of the prop's app). */
  readonly accounts: Pick<ConnectedAccounts, "checkBindings">;
}

export interface Deployed {
  readonly workflowId: string;
  readonly version: number;
  readonly position: number | undefined;
}

const scope = (ownerId: string) => `workflows-${ownerId}`;

/** The key a definition is known by: given, or its name as a slug. */
export function workflowKey(definition: WorkflowDefinition, key?: string): string {
  const chosen = key ?? slugify(definition.name);
  if (chosen === "") throw new DomainError("invalid_request", "the workflow needs a key (its file name) or a name with letters or digits");
  return chosen;
}

/** Inline code as a component: a whole action module as is, or `async (steps, $) => …` wrapped into one. */
export function codeStepFiles(step: { name: string; code: string }): { files: Record<string, string>; entry: string } {
  const isModule = /\bexport\s+default\b|\bmodule\.exports\b/.test(step.code);
  const usesDefine = /\bdefineComponent\s*\(/.test(step.code) && !/import\s*\{[^}]*defineComponent/.test(step.code);
  const stepModule = isModule
    ? // Pipedream code steps call defineComponent without importing it.
      `${usesDefine ? 'import { defineComponent } from "@pipedream/types";\n' : ""}${step.code}\n`
    : `const step = (\n${step.code}\n);\nexport default step;\n`;
  const wrapper = isModule
    ? `import step from "./step.mjs";
// A module without a type is an action (a code step), unless its props make it a source.
const isSource = Object.values(step.props ?? {}).some((p) => typeof p?.type === "string" && p.type.startsWith("$.interface."));
export default { ...step, name: step.name ?? ${JSON.stringify(step.name)}, version: step.version ?? "0.0.1", type: step.type ?? (isSource ? "source" : "action") };
`
    : `import step from "./step.mjs";
if (typeof step !== "function") throw new TypeError("a code step is a function: async (steps, $) => …");
export default {
  name: ${JSON.stringify(step.name)},
  version: "0.0.1",
  type: "action",
  props: {},
  async run({ steps, $ }) {
    return await step(steps, $);
  },
};
`;
  return { files: { "step.mjs": stepModule, "index.mjs": wrapper }, entry: "index.mjs" };
}

/** Whether the action computes more props from the configured ones (additionalProps): those are checked at run time. */
const definesAdditionalProps = (component: LoadedComponent) => component.meta.component.additionalProps === true;

export class WorkflowService {
  readonly #workflows: HandlerOf<typeof workflowDecider>;
  readonly #names: Names;

  constructor(private readonly deps: WorkflowServiceDeps) {
    this.#workflows = new CommandHandler(deps.store, workflowDecider, streams.workflow);
    this.#names = new Names(deps.store);
  }

  /**
   * Deploys a definition for an owner: a new workflow, or a new version of the one deployed under
   * the same key. `canSee` says which owners' saved components the caller may use.
   */
  async deploy(
    input: { ownerId: string; creatorId: string; key: string; definition: WorkflowDefinition; canSee: (ownerId: string) => boolean },
    options: HandleOptions = {},
  ): Promise<Deployed> {
    const { ownerId, definition } = input;
    const trigger = this.#trigger(definition);
    const { steps, unsaved } = await this.#steps(ownerId, definition.steps, input.canSee);
    const at = this.deps.clock.now();
    const id = await this.#idFor(ownerId, input.key, at, options);
    // The steps' code is saved only now that the whole definition passed: a refused deploy leaves
    // the catalog as it was, as a refused source deploy does.
    let savedAt: number | undefined;
    for (const component of unsaved) savedAt = (await this.deps.catalog.commit(component, options)).position ?? savedAt;
    if (savedAt !== undefined) await this.deps.waitFor(savedAt);
    const appended = await this.#workflows.handle(
      id,
      {
        type: "DeployWorkflow",
        data: {
          id,
          ownerId,
          creatorId: input.creatorId,
          key: input.key,
          name: definition.name,
          description: definition.description ?? null,
          trigger,
          steps,
          errorWorkflow: definition.error_workflow ?? false,
          active: definition.active ?? true,
          deploymentId: newId("d"),
          at,
          newEndpointId: endpointToken(),
        },
      },
      options,
    );
    const version = appended.events[0]?.type === "WorkflowDeployed" ? appended.events[0].data.version : 1;
    return { workflowId: id, version, position: appended.position };
  }

  async delete(workflow: Workflow, options: HandleOptions = {}): Promise<{ position: number | undefined }> {
    const deleted = await this.#workflows.handle(
      workflow.id,
      { type: "DeleteWorkflow", data: { id: workflow.id, at: this.deps.clock.now() } },
      options,
    );
    await this.#names.release(
      { scope: scope(workflow.ownerId), name: workflow.key, holder: workflow.id, at: Math.floor(this.deps.clock.now() / 1000) },
      options,
    );
    // Its emits, errors, logs and timer go with it; its command stream stays for audit.
    for (const stream of emitterDataStreams(workflow.id)) {
      const revision = await this.deps.store.streamRevision(stream);
      if (revision !== undefined) await this.deps.store.truncateBefore(stream, revision + 1);
    }
    return { position: deleted.position };
  }

  /** The id deployed under this key, or a new one with the key claimed for it. */
  async #idFor(ownerId: string, key: string, at: number, options: HandleOptions): Promise<string> {
    const known = this.deps.workflows.byKey(ownerId, key);
    if (known) return known.id;
    const holder = await this.#names.holder(scope(ownerId), key);
    if (holder && (await this.deps.store.streamRevision(streams.workflow(holder))) !== undefined) {
      const { state } = await this.#workflows.load(holder);
      if (state.status === "deployed") return holder;
    }
    const id = newId("p");
    try {
      await this.#names.claim({ scope: scope(ownerId), name: key, holder: id, at: Math.floor(at / 1000) }, options);
      return id;
    } catch (error) {
      // Deployed at the same moment by another request: that one's id is the workflow.
      const winner =
        error instanceof DomainError && error.code === "name_taken" ? await this.#names.holder(scope(ownerId), key) : undefined;
      if (winner) return winner;
      throw error;
    }
  }

  #trigger(definition: WorkflowDefinition): WorkflowTrigger {
    const trigger = triggerOf(definition);
    switch (trigger.type) {
      case "http":
        return { type: "http", respond: trigger.respond ?? "immediately" };
      case "none":
        return { type: "none" };
      case "timer": {
        const { timer, problems } = checkTimerValue(
          trigger.cron !== undefined
            ? { cron: trigger.cron, timezone: trigger.timezone }
            : { intervalSeconds: trigger.interval_seconds, timezone: trigger.timezone },
          this.deps.rules,
          "definition.trigger",
        );
        if (!timer) throw new DomainError("invalid_request", `${problems[0].path} ${problems[0].message}`, problems);
        if (problems.length > 0) throw new DomainError("invalid_request", `${problems[0].path} ${problems[0].message}`, problems);
        return "cron" in timer
          ? { type: "timer", cron: timer.cron, ...(timer.timezone !== undefined ? { timezone: timer.timezone } : {}) }
          : { type: "timer", intervalSeconds: timer.intervalSeconds };
      }
    }
  }

  /** The steps, with the code given inline or as files prepared (checked, not saved: `unsaved`). */
  async #steps(
    ownerId: string,
    definitions: readonly StepDefinition[],
    canSee: (ownerId: string) => boolean,
  ): Promise<{ steps: WorkflowStep[]; unsaved: Unsaved[] }> {
    const problems: ProblemDetail[] = [];
    const steps: WorkflowStep[] = [];
    const unsaved: Unsaved[] = [];
    for (const [i, step] of definitions.entries()) {
      const where = `definition.steps[${i}]`;
      const resolved = await this.#component(ownerId, step, where, canSee);
      if ("problem" in resolved) {
        problems.push(resolved.problem);
        continue;
      }
      let { component } = resolved;
      const { kind } = resolved;
      const command = resolved.unsaved?.command;
      if (command) {
        // The same code in two steps (one action file used twice) is one component, as it was when saved step by step.
        const same = unsaved.find((u) => u.command!.data.codeHash === command.data.codeHash && u.command!.data.url === command.data.url);
        if (same) component = same.component;
        else unsaved.push(resolved.unsaved!);
      }
      if (component.type !== "action") {
        problems.push({ path: where, message: `${component.key ?? component.id} is a ${component.type}: workflow steps are actions` });
        continue;
      }
      const stored = this.#props(component, step.props ?? {}, `${where}.props`, problems);
      await this.deps.accounts.checkBindings(ownerId, component.meta.component.props, stored);
      steps.push({ cellId: newId("c"), name: step.name, componentId: component.id, kind, props: stored });
    }
    if (problems.length > 0) throw new DomainError("invalid_request", `${problems[0].path} ${problems[0].message}`, problems);
    return { steps, unsaved };
  }

  async #component(
    ownerId: string,
    step: StepDefinition,
    where: string,
    canSee: (ownerId: string) => boolean,
  ): Promise<{ component: LoadedComponent; kind: WorkflowStep["kind"]; unsaved?: Unsaved } | { problem: ProblemDetail }> {
    try {
      if (step.code !== undefined) {
        const unsaved = await this.deps.catalog.prepare(ownerId, codeStepFiles({ name: step.name, code: step.code }));
        return { component: unsaved.component, kind: "code", unsaved };
      }
      if (step.files !== undefined) {
        const unsaved = await this.deps.catalog.prepare(ownerId, { files: step.files, entry: step.entry ?? "" });
        return { component: unsaved.component, kind: "action", unsaved };
      }
      const reference = step.component_id ?? step.action!;
      if (/^sc_[0-9a-z]+$/.test(reference)) {
        const component = this.deps.catalog.usable(reference, canSee);
        return component ? { component, kind: "action" } : { problem: { path: where, message: `component ${reference} not found` } };
      }
      if (isFilePath(reference)) {
        return {
          problem: {
            path: `${where}.action`,
            message: `${reference} is a file: deploy the definition with \`headwater workflow deploy\`, which uploads it, or give files and entry`,
          },
        };
      }
      const component = this.deps.catalog.byKey(ownerId, reference) ?? this.deps.catalog.byKey(REGISTRY_OWNER, reference);
      return component
        ? { component, kind: "action" }
        : { problem: { path: `${where}.action`, message: `no component with key ${reference}` } };
    } catch (error) {
      // A step's code that does not load or validate: said at the step.
      if (error instanceof DomainError && error.code === "invalid_request") {
        const detail = error.details?.[0];
        return { problem: { path: where, message: detail ? `${detail.path}: ${detail.message}` : error.message } };
      }
      throw error;
    }
  }

  /** Static props checked (types, options, bounds) and secrets sealed; expressions are checked for syntax and evaluated at run time. */
  #props(component: LoadedComponent, given: Record<string, unknown>, where: string, problems: ProblemDetail[]): Record<string, unknown> {
    const expressions = Object.keys(given).filter((name) => hasExpression(given[name]));
    for (const name of expressions) problems.push(...expressionProblems(given[name], `${where}.${name}`));
    const fixed = Object.fromEntries(Object.entries(given).filter(([name]) => !expressions.includes(name)));
    const props = component.meta.component.props.filter((p) => !expressions.includes(p.name));
    const checked = checkConfiguredProps(props, fixed, this.deps.sealer, this.deps.rules);
    const hasAdditional = definesAdditionalProps(component);
    for (const problem of checked.problems) {
      const name = problem.path.replace(/^configured_props\./, "");
      // Props an additionalProps method defines are known only at run time.
      if (hasAdditional && problem.message === "is not a prop of this component") continue;
      problems.push({ path: `${where}.${name}`, message: problem.message });
    }
    const unknownKept = hasAdditional
      ? Object.fromEntries(Object.entries(fixed).filter(([name]) => !props.some((p) => p.name === name)))
      : {};
    return { ...checked.stored, ...unknownKept, ...Object.fromEntries(expressions.map((name) => [name, given[name]])) };
  }
}
