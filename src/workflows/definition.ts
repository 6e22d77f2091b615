// A workflow definition as users write it (YAML or JSON): its schema, parsing and the checks that
// give every problem a path. What a definition becomes (components saved, props sealed) is the
// workflow service's; the rules of the aggregate are commands/workflows.
import { Type, type Static } from "@sinclair/typebox";
import { parse as parseYaml, YAMLParseError } from "yaml";
import { DomainError, type ProblemDetail } from "../../commands/decider.js";
import { MAX_STEPS } from "../../commands/workflows/workflow.js";
import { MAX_INPUT_DEPTH, parseJson, JsonLimitError } from "../json/bounded.js";
import { schemaValidator } from "../validation.js";

const Trigger = Type.Object(
  {
    type: Type.Union([Type.Literal("http"), Type.Literal("timer"), Type.Literal("none")], {
      description:
        "http: an endpoint URL; timer: interval_seconds or cron (read in timezone, UTC by default); none: runs only through subscriptions or by hand",
    }),
    respond: Type.Optional(
      Type.Union([Type.Literal("immediately"), Type.Literal("workflow")], {
        description: "http only: answer at once when the request is queued (default), or wait for a step's $.respond",
      }),
    ),
    interval_seconds: Type.Optional(Type.Integer({ minimum: 1 })),
    cron: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'a cron\'s IANA time zone, such as "Europe/Paris"' })),
  },
  { additionalProperties: false },
);

const Step = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: "steps.<name> in later steps" }),
    action: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: "a registry key, a saved component id (sc_…), or a file path (uploaded by `headwater workflow deploy`)",
      }),
    ),
    code: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024 * 1024, description: "inline `async (steps, $) => …`, or a whole action component" }),
    ),
    component_id: Type.Optional(Type.String({ maxLength: 100 })),
    files: Type.Optional(
      Type.Record(Type.String({ maxLength: 500 }), Type.String({ maxLength: 1024 * 1024 }), {
        description: "an action's files (with entry)",
      }),
    ),
    entry: Type.Optional(Type.String({ maxLength: 500 })),
    props: Type.Optional(Type.Record(Type.String({ maxLength: 200 }), Type.Unknown())),
  },
  { additionalProperties: false },
);

export const WorkflowDefinitionSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    trigger: Type.Optional(Type.Union([Trigger, Type.Literal("http"), Type.Literal("timer"), Type.Literal("none")])),
    steps: Type.Array(Step, { minItems: 1, maxItems: MAX_STEPS }),
    error_workflow: Type.Optional(Type.Boolean({ description: "receive the errors of the owner's other workflows" })),
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, $id: "WorkflowDefinition" },
);
export type WorkflowDefinition = Static<typeof WorkflowDefinitionSchema>;
export type StepDefinition = WorkflowDefinition["steps"][number];
export type TriggerDefinition = Static<typeof Trigger>;

const validate = schemaValidator<WorkflowDefinition>(WorkflowDefinitionSchema, "definition");

/** A definition given as text (YAML, or JSON, which YAML reads too) or as an already parsed value. */
export function parseDefinition(input: unknown): WorkflowDefinition {
  let value = input;
  if (typeof input === "string") {
    try {
      // maxAliasCount bounds alias expansion ("billion laughs"); the depth is checked below.
      value = parseYaml(input, { maxAliasCount: 100, uniqueKeys: true, prettyErrors: true });
    } catch (error) {
      const where =
        error instanceof YAMLParseError && error.linePos ? ` at line ${error.linePos[0].line}, column ${error.linePos[0].col}` : "";
      throw new DomainError(
        "invalid_request",
        `the definition is not valid YAML or JSON${where}: ${(error as Error).message.split("\n")[0]}`,
        [{ path: "definition", message: "is not valid YAML or JSON" }],
      );
    }
  }
  try {
    // Nesting past the bound could not be stored: refused like any client input.
    parseJson(JSON.stringify(value ?? null), { maxDepth: MAX_INPUT_DEPTH });
  } catch (error) {
    if (error instanceof JsonLimitError) throw new DomainError("json_too_deep", `the definition: ${error.message}`);
    throw new DomainError("invalid_request", "the definition cannot be read as JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new DomainError("invalid_request", "the definition must be an object with name, trigger and steps", [
      { path: "definition", message: "must be an object" },
    ]);
  }
  const definition = validate(value);
  const problems: ProblemDetail[] = [];
  definition.steps.forEach((step, i) => {
    const given = [step.action, step.code, step.component_id, step.files].filter((v) => v !== undefined).length;
    if (given !== 1) {
      problems.push({ path: `definition.steps[${i}]`, message: "give exactly one of action, code, component_id or files (with entry)" });
    }
    if ((step.files === undefined) !== (step.entry === undefined)) {
      problems.push({ path: `definition.steps[${i}].entry`, message: "files and entry go together" });
    }
  });
  const trigger = triggerOf(definition);
  if (trigger.type === "timer" && (trigger.interval_seconds === undefined) === (trigger.cron === undefined)) {
    problems.push({ path: "definition.trigger", message: "a timer trigger needs exactly one of interval_seconds or cron" });
  }
  if (
    trigger.type !== "timer" &&
    (trigger.interval_seconds !== undefined || trigger.cron !== undefined || trigger.timezone !== undefined)
  ) {
    problems.push({ path: "definition.trigger", message: "interval_seconds, cron and timezone belong to a timer trigger" });
  }
  if (trigger.type !== "http" && trigger.respond !== undefined) {
    problems.push({ path: "definition.trigger.respond", message: "belongs to an http trigger" });
  }
  if (problems.length > 0) throw new DomainError("invalid_request", `${problems[0].path} ${problems[0].message}`, problems);
  return definition;
}

/** The trigger in its long form ("http" is {type: "http"}; none given: runs only through subscriptions). */
export function triggerOf(definition: WorkflowDefinition): TriggerDefinition {
  const trigger = definition.trigger ?? "none";
  return typeof trigger === "string" ? { type: trigger } : trigger;
}

/** Whether an action reference is a file path (uploaded by the CLI) rather than a key or an id. */
export const isFilePath = (action: string) => /^(\.{1,2}\/|\/)/.test(action) || /\.(m?js|cjs|ts|mts|cts)$/.test(action);
