// `headwater action run <file|dir|key>`: run one action by hand, as `pd` does. A file is uploaded
// with its relative imports (as deploy does) to POST /v1/components, then run with
// POST /v1/components/{id}/run; anything else is a key (yours, then the registry's).
import type { Command } from "commander";
import type { ActionRunView, ComponentView } from "../client.js";
import { action, collectProp, propsFrom, withConnection, type CommonOptions } from "../common.js";
import { resolveTarget } from "../componentFiles.js";
import { compact, type Output } from "../output.js";
import { CliError, EXIT, usage } from "../../failure.js";

interface RunOptions extends CommonOptions {
  readonly prop?: Record<string, unknown>;
  readonly props?: string;
  readonly steps?: string;
  readonly entry?: string;
  readonly org?: string;
}

function stepsFrom(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw usage(`--steps is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw usage("--steps must be a JSON object");
  return parsed as Record<string, unknown>;
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2) ?? String(value);
const indent = (text: string, by = "    ") => text.replace(/^/gm, by);

function sendLine(out: Output, send: ActionRunView["sends"][number]): string {
  const detail = send.detail ?? {};
  const where =
    send.kind === "http"
      ? `HTTP ${typeof detail.status === "number" ? detail.status : ""}`.trim()
      : send.kind === "email"
        ? typeof detail.recipient === "string"
          ? `to ${detail.recipient}`
          : ""
        : typeof detail.key === "string"
          ? `s3://${String(detail.bucket)}/${detail.key}`
          : "";
  const status = send.ok ? out.c.green("sent") : out.c.red(`not sent: ${send.error ?? "no detail"}`);
  return `${send.kind.padEnd(5)} ${status}${where && send.ok ? ` ${out.c.dim(where)}` : ""}`;
}

function printRun(out: Output, name: string, run: ActionRunView): void {
  const status = !run.ok
    ? out.c.red("failed")
    : run.exited
      ? out.c.yellow(`exited${run.exited.reason ? `: ${run.exited.reason}` : ""}`)
      : out.c.green("ok");
  out.line(`${name} ${out.c.dim(`(${run.invocation_id})`)}: ${status}`);
  if (run.error) out.line(`  ${out.c.red(`${run.error.code} ${run.error.name}: ${run.error.message}`)}`);
  if (run.summary !== null && run.summary !== undefined) out.line(`  ${out.c.dim("summary")}  ${compact(run.summary)}`);
  if (run.ok && !run.exited) {
    out.line(`  ${out.c.dim("return value")}`);
    out.line(indent(pretty(run.return_value)));
  }
  const exports = Object.entries(run.exports).filter(([name]) => name !== "$summary");
  if (exports.length > 0) {
    out.line(`  ${out.c.dim("exports")}`);
    for (const [key, value] of exports) out.line(`    ${key} = ${compact(value)}`);
  }
  if (run.sends.length > 0) {
    out.line(`  ${out.c.dim("sends")}`);
    for (const send of run.sends) out.line(`    ${sendLine(out, send)}`);
  }
  for (const e of run.emits) out.line(`  ${out.c.dim("emitted")}  ${e.name ? `${out.c.cyan(`[${e.name}]`)} ` : ""}${compact(e.event)}`);
  if (run.response) out.line(`  ${out.c.dim("response")}  ${run.response.status} ${compact(run.response.body ?? "")}`);
  if (run.logs.length > 0) {
    out.line(`  ${out.c.dim("logs")}`);
    for (const line of run.logs) out.line(`    ${out.c.dim(line.level.padEnd(6))} ${line.message}`);
  }
}

export function actionCommands(program: Command): void {
  const group = program.command("action").description("actions: run one by hand");
  withConnection(
    group
      .command("run <target>")
      .description(
        "run an action once (a file uploaded with its relative imports, a directory's entry file, or a key) and print its outcome",
      )
      .option("--prop <key=value>", "a prop value, repeatable; the value is JSON when it parses, else text", collectProp)
      .option("--props <json>", "prop values as one JSON object (--prop values win)")
      .option("--steps <json>", "what run({ steps }) receives, as a JSON object (default {})")
      .option("--entry <file>", "the entry file of a directory (default: its one *.mjs/*.js/*.ts component file)")
      .option("--org <org_id>", "run it in an organization (its keys, its connected accounts)"),
  ).action(
    action(async ({ out, client, json }, target: string, options: RunOptions) => {
      const props = propsFrom(options) ?? {};
      const steps = stepsFrom(options.steps);
      const api = client();
      const org = options.org ? { query: { org_id: options.org } } : {};
      const spinner = out.spinner(`reading ${target}`);
      let run: ActionRunView;
      let name = target;
      try {
        const { code, describe } = await resolveTarget(target, options.entry);
        let id: string;
        if ("key" in code) id = code.key;
        else {
          spinner.update(`saving ${describe}`);
          const saved = (await api.request<{ data: ComponentView }>("POST", "/components", { body: code, ...org })).data;
          id = saved.id;
          name = `${saved.name} ${out.c.dim(`${saved.key ?? saved.id}@${saved.version}`)}`;
        }
        spinner.update(`running ${describe}`);
        run = (
          await api.request<{ data: ActionRunView }>("POST", `/components/${encodeURIComponent(id)}/run`, {
            body: { props, ...(steps ? { steps } : {}) },
            ...org,
          })
        ).data;
      } finally {
        spinner.stop();
      }
      if (json) out.document(run);
      else printRun(out, name, run);
      if (!run.ok) {
        const failure = new CliError(
          "run_failed",
          `the action failed: ${run.error ? `${run.error.code} ${run.error.name}: ${run.error.message}` : "no detail"}`,
        );
        if (json) out.note(JSON.stringify({ error: failure.message, code: failure.code }));
        return EXIT.failure;
      }
    }),
  );
}
