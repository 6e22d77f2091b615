import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

// A workflow (p_…): a trigger and ordered steps, each an action component with its props. It is
// deployed from a definition file; deploying the same key again makes a new version of the same
// workflow (same p_ id, a new d_ deployment id, new c_ cell ids). Its emits and errors live in
// the emitter streams every emitter has (commands/emitters), its runs in logs-<p_…>.

/** Props as stored: secret values sealed; strings may hold {{ steps… }} expressions evaluated at run time. */
export type StepProps = Record<string, unknown>;

export interface WorkflowStep {
  /** c_…: the cell's id in this deployment (errors name it as error.cellId). */
  readonly cellId: string;
  /** How later steps read it: steps.<name>.$return_value, steps.<name>.<export>. */
  readonly name: string;
  /** The action component the step runs (sc_…; inline code is saved as a component too). */
  readonly componentId: string;
  /** "code": an inline `async (steps, $) => …` function; "action": an action component. */
  readonly kind: "action" | "code";
  readonly props: StepProps;
}

export type WorkflowTrigger =
  | { readonly type: "http"; readonly respond: "immediately" | "workflow" }
  | { readonly type: "timer"; readonly intervalSeconds: number }
  | { readonly type: "timer"; readonly cron: string; readonly timezone?: string }
  | { readonly type: "none" };

export interface WorkflowDefinitionData {
  readonly name: string;
  readonly description: string | null;
  readonly trigger: WorkflowTrigger;
  readonly steps: readonly WorkflowStep[];
  /** This workflow receives the errors of the owner's other workflows (the global error workflow). */
  readonly errorWorkflow: boolean;
  readonly active: boolean;
}

export type WorkflowDeployed = DomainEvent<
  "WorkflowDeployed",
  WorkflowDefinitionData & {
    id: string;
    ownerId: string;
    /** Who deployed this version; its runs are billed to them. */
    creatorId: string;
    /** What the definition is known by in its owner's namespace (the file name): the same key is a new version. */
    key: string;
    version: number;
    /** d_…: this version's deployment. */
    deploymentId: string;
    /** The path segment of the HTTP trigger's endpoint, kept across versions (null without an HTTP trigger). */
    endpointId: string | null;
    at: number;
  }
>;
export type WorkflowDeleted = DomainEvent<"WorkflowDeleted", { id: string; ownerId: string; key: string; at: number }>;
export type WorkflowEvent = WorkflowDeployed | WorkflowDeleted;

export type WorkflowState =
  | { status: "none" | "deleted" }
  | { status: "deployed"; id: string; ownerId: string; key: string; version: number; endpointId: string | null };

export type DeployWorkflow = Command<
  "DeployWorkflow",
  Omit<WorkflowDeployed["data"], "version" | "endpointId"> & {
    /** A fresh endpoint id, used when the workflow gets its first HTTP trigger. */
    newEndpointId: string;
  }
>;
export type DeleteWorkflow = Command<"DeleteWorkflow", { id: string; at: number }>;
export type WorkflowCommand = DeployWorkflow | DeleteWorkflow;

export const MAX_STEPS = 50;
export const STEP_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const WORKFLOW_KEY = /^[a-z0-9][a-z0-9._-]{0,99}$/;

function checkDefinition(data: DeployWorkflow["data"]): void {
  const problems: { path: string; message: string }[] = [];
  if (!WORKFLOW_KEY.test(data.key))
    problems.push({ path: "key", message: "must be 1-100 of a-z 0-9 . _ - starting with a letter or digit" });
  if (data.name.trim().length === 0 || data.name.length > 200) problems.push({ path: "name", message: "must be 1-200 characters" });
  if (data.steps.length === 0) problems.push({ path: "steps", message: "a workflow needs at least one step" });
  if (data.steps.length > MAX_STEPS) problems.push({ path: "steps", message: `at most ${MAX_STEPS} steps` });
  const seen = new Set<string>();
  data.steps.forEach((step, i) => {
    if (!STEP_NAME.test(step.name)) {
      problems.push({ path: `steps[${i}].name`, message: "must be an identifier (letters, digits, _; not starting with a digit)" });
    } else if (step.name === "trigger") {
      problems.push({ path: `steps[${i}].name`, message: '"trigger" names the triggering event (steps.trigger.event)' });
    } else if (seen.has(step.name)) {
      problems.push({ path: `steps[${i}].name`, message: `another step is named "${step.name}"` });
    }
    seen.add(step.name);
  });
  const trigger = data.trigger;
  if (
    trigger.type === "timer" &&
    "intervalSeconds" in trigger &&
    !(Number.isInteger(trigger.intervalSeconds) && trigger.intervalSeconds > 0)
  ) {
    problems.push({ path: "trigger.interval_seconds", message: "must be a positive integer" });
  }
  if (problems.length > 0)
    throw new DomainError("invalid_request", `invalid workflow: ${problems[0].path} ${problems[0].message}`, problems);
}

export const workflow: Decider<WorkflowCommand, WorkflowState, WorkflowEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "WorkflowDeployed": {
        const { id, ownerId, key, version } = event.data;
        // The last endpoint is remembered through versions without an HTTP trigger.
        const endpointId = event.data.endpointId ?? (state.status === "deployed" ? state.endpointId : null);
        return { status: "deployed", id, ownerId, key, version, endpointId };
      }
      case "WorkflowDeleted":
        return { status: "deleted" };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "DeployWorkflow": {
        const { newEndpointId, ...data } = command.data;
        if (state.status === "deleted")
          throw new DomainError("already_exists", `workflow ${data.id} was deleted; deploy it under a new id`);
        if (state.status === "deployed" && (state.ownerId !== data.ownerId || state.key !== data.key)) {
          throw new DomainError("already_exists", `workflow ${data.id} belongs to another key`);
        }
        checkDefinition(command.data);
        const version = state.status === "deployed" ? state.version + 1 : 1;
        // The endpoint URL survives new versions: clients keep posting to the same address.
        const endpointId = data.trigger.type === "http" ? ((state.status === "deployed" ? state.endpointId : null) ?? newEndpointId) : null;
        return [{ type: "WorkflowDeployed", data: { ...data, version, endpointId } }];
      }
      case "DeleteWorkflow": {
        if (state.status !== "deployed") throw notFound(`workflow ${command.data.id}`);
        return [{ type: "WorkflowDeleted", data: { id: command.data.id, ownerId: state.ownerId, key: state.key, at: command.data.at } }];
      }
    }
  },
};
