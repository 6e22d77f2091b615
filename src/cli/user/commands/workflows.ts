// headwater workflow deploy|list|delete|run: workflows from definition files (YAML or JSON).
// deploy uploads each step's action file with the files its relative imports reach, and deploys
// under the file's name: the same file name again is a new version of the same workflow.
import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { action, withConnection, type CommonOptions } from "../common.js";
import { collectFiles } from "../componentFiles.js";
import { compact, when } from "../output.js";
import { CliError, usage } from "../../failure.js";
import { slugify } from "../../../slug.js";

interface WorkflowView {
  id: string;
  key: string;
  name: string;
  version: number;
  deployment_id: string;
  trigger: { type: string; endpoint_url?: string; interval_seconds?: number; cron?: string; timezone?: string; respond?: string };
  steps: { name: string; cell_id: string; component_id: string }[];
  active: boolean;
  error_workflow: boolean;
  updated_at: number;
}

/** Files in a step's action: a path relative to the definition (./x.mjs, ../common/y.js, /abs.mjs, or a name ending .mjs/.js/.ts). */
const isFilePath = (action: string) => /^(\.{1,2}\/|\/)/.test(action) || /\.(m?js|cjs|ts|mts|cts)$/.test(action);

/** The key a file deploys under: its name without the extension, as a slug ("My Flow.yaml" → "my-flow"). */
export function keyOfFile(file: string): string {
  const base = path.basename(file).replace(/\.(ya?ml|json)$/i, "");
  const key = slugify(base);
  if (key === "") throw usage(`cannot make a workflow key from the file name ${path.basename(file)}: give --key`);
  return key;
}

/** The definition with every step whose action is a file replaced by the files it uploads. */
export async function definitionWithFiles(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    // A local file that is not there is the command line's mistake, as for `headwater deploy` (exit 2).
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw usage(`no such file or directory: ${file}`);
    throw new CliError("invalid_request", `cannot read ${file}: ${(error as Error).message}`);
  }
  let definition: unknown;
  try {
    definition = parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new CliError("invalid_request", `${file} is not valid YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
  if (definition === null || typeof definition !== "object" || Array.isArray(definition)) {
    throw new CliError("invalid_request", `${file} must hold an object with name, trigger and steps`);
  }
  const steps = (definition as { steps?: unknown }).steps;
  if (!Array.isArray(steps)) return definition as Record<string, unknown>;
  const dir = path.dirname(path.resolve(file));
  const uploaded = await Promise.all(
    steps.map(async (step: unknown) => {
      if (step === null || typeof step !== "object" || Array.isArray(step)) return step;
      const { action: reference, ...rest } = step as { action?: unknown };
      if (typeof reference !== "string" || !isFilePath(reference)) return step;
      const { files, entry } = await collectFiles(path.resolve(dir, reference));
      return { ...rest, files, entry };
    }),
  );
  return { ...(definition as Record<string, unknown>), steps: uploaded };
}

export function workflowCommands(program: Command): void {
  const workflow = program.command("workflow").description("workflows: a trigger and action steps, deployed from a YAML or JSON file");

  withConnection(
    workflow
      .command("deploy <file>")
      .description("deploy a workflow definition (prints the workflow as JSON); the same file name again deploys a new version")
      .option("--key <key>", "deploy under this key instead of the file's name")
      .option("--org <org_id>", "deploy into an organization"),
  ).action(
    action(async ({ out, client }, file: string, options: CommonOptions & { key?: string; org?: string }) => {
      const definition = await definitionWithFiles(file);
      const answer = await client().request<{ data: WorkflowView }>("POST", "/workflows", {
        body: { definition, key: options.key ?? keyOfFile(file), ...(options.org ? { org_id: options.org } : {}) },
      });
      // Printed as JSON whatever the output mode: scripts take the p_ id from it.
      out.document(answer.data);
    }),
  );

  withConnection(
    workflow.command("list").description("your workflows (or an organization's)").option("--org <org_id>", "an organization's workflows"),
  ).action(
    action(async ({ out, client }, options: CommonOptions & { org?: string }) => {
      const workflows = await client().all<WorkflowView>(options.org ? `/orgs/${options.org}/workflows` : "/users/me/workflows");
      if (out.json) return out.document(workflows);
      if (workflows.length === 0) return out.note(out.e.dim("no workflows: deploy one with headwater workflow deploy <file>"));
      out.table(
        ["ID", "KEY", "NAME", "VERSION", "TRIGGER", "STEPS", "UPDATED"],
        workflows.map((w) => [
          w.id,
          w.key,
          w.name,
          `v${w.version}`,
          w.trigger.type === "http"
            ? (w.trigger.endpoint_url ?? "http")
            : w.trigger.type === "timer"
              ? w.trigger.cron
                ? `${w.trigger.cron} (${w.trigger.timezone ?? "UTC"})`
                : `every ${w.trigger.interval_seconds} s`
              : "none",
          w.steps.map((s) => s.name).join(" → "),
          when(w.updated_at),
        ]),
      );
    }),
  );

  withConnection(workflow.command("delete <workflow>").description("delete a workflow (p_ id) with its emits, errors and logs")).action(
    action(async ({ out, client }, id: string) => {
      if (!/^p_[0-9a-z]+$/.test(id)) throw usage(`${id} is not a workflow id (p_…)`);
      await client().request("DELETE", `/workflows/${id}`);
      if (out.json) return out.document({ id, deleted: true });
      out.line(`Deleted workflow ${out.c.bold(id)}`);
    }),
  );

  withConnection(
    workflow
      .command("run <workflow>")
      .description("run a workflow once now and print every step's outcome")
      .option("--event <json>", "the trigger event (steps.trigger.event)"),
  ).action(
    action(async ({ out, client }, id: string, options: CommonOptions & { event?: string }) => {
      if (!/^p_[0-9a-z]+$/.test(id)) throw usage(`${id} is not a workflow id (p_…)`);
      let event: unknown;
      if (options.event !== undefined) {
        try {
          event = JSON.parse(options.event);
        } catch {
          throw usage("--event is not JSON");
        }
      }
      const answer = await client().request<{
        data: {
          ok: boolean | null;
          error: { name: string; message: string; cell_id: string | null } | null;
          steps: { name: string; ok: boolean; return_value?: unknown; exited?: string | null }[];
          logs: { level: string; message: string }[];
        };
      }>("POST", `/workflows/${id}/run`, { body: event === undefined ? {} : { event } });
      const outcome = answer.data;
      if (out.json) out.document(outcome);
      else {
        for (const step of outcome.steps) {
          const mark = step.ok ? out.c.green("ok") : out.c.red("failed");
          out.line(
            `${step.name} ${mark}${step.return_value !== undefined && step.return_value !== null ? ` ${compact(step.return_value)}` : ""}`,
          );
          if (step.exited !== undefined) out.line(`  $.flow.exit${step.exited ? `: ${step.exited}` : ""}`);
        }
        for (const line of outcome.logs) if (line.level !== "system") out.line(out.c.dim(`  ${line.level} ${line.message}`));
        if (outcome.error) out.line(out.c.red(`error: ${outcome.error.name}: ${outcome.error.message}`));
      }
      return outcome.ok === false ? 1 : 0;
    }),
  );
}
