// deploy, update, pause, resume, delete, run: a source's lifecycle through /v1/sources.
import type { Command } from "commander";
import type { ComponentView, HeadwaterClient, RunOutcome, SourceView } from "../client.js";
import {
  action,
  collectProp,
  endpointOf,
  findSource,
  parseLoose,
  propsForUpdate,
  propsFrom,
  withConnection,
  type CommonOptions,
  type Context,
} from "../common.js";
import { resolveTarget, type ComponentCode } from "../componentFiles.js";
import { compact, when, type Output } from "../output.js";
import { askLine, interactive } from "../prompt.js";
import { CliError, EXIT, usage } from "../../failure.js";

interface PropOptions {
  readonly prop?: Record<string, unknown>;
  readonly props?: string;
  readonly name?: string;
}

interface DeployOptions extends CommonOptions, PropOptions {
  readonly entry?: string;
  readonly org?: string;
  readonly update?: string;
}

interface UpdateOptions extends CommonOptions, PropOptions {
  readonly code?: string;
  readonly entry?: string;
  readonly org?: string;
  readonly force?: boolean;
}

const withProps = (command: Command) =>
  command
    .option("--name <name>", "the source's name (its name_slug follows)")
    .option("--prop <key=value>", "a configured prop, repeatable; the value is JSON when it parses, else text", collectProp)
    .option("--props <json>", "configured props as one JSON object (--prop values win)");

async function componentOf(client: HeadwaterClient, id: string): Promise<ComponentView | undefined> {
  try {
    return (await client.get<{ data: ComponentView }>(`/components/${id}`)).data;
  } catch {
    return undefined; // only shown to people: a source is described without it
  }
}

/** A source for people: name, id, component, endpoint, status. */
export async function describeSource(context: Context, source: SourceView, heading: string): Promise<void> {
  const { out } = context;
  const component = await componentOf(context.client(), source.component_id);
  out.line(`${heading} ${out.c.bold(source.name)} ${out.c.dim(`(${source.id})`)}`);
  const endpoint = endpointOf(source);
  out.fields([
    ["  name_slug", source.name_slug],
    [
      "  component",
      component ? `${component.key ?? component.name}@${component.version} ${out.c.dim(`(${source.component_id})`)}` : source.component_id,
    ],
    ["  endpoint", endpoint ? out.c.cyan(endpoint) : undefined],
    ["  status", source.active ? out.c.green("active") : out.c.yellow("paused")],
    ["  props", Object.keys(propsForUpdate(source.configured_props)).length ? compact(propsForUpdate(source.configured_props)) : undefined],
    ["  updated", when(source.updated_at)],
  ]);
}

/** PUT /sources/{id}, keeping the source active or paused as it is unless `active` is given (PUT defaults to active). */
async function putSource(
  client: HeadwaterClient,
  source: SourceView,
  changes: { code?: ComponentCode; name?: string; props?: Record<string, unknown>; active?: boolean },
  force = false,
): Promise<SourceView> {
  const body = {
    ...(changes.code ?? {}),
    ...(changes.name !== undefined ? { name: changes.name } : {}),
    // --prop values are merged into the source's current props (secrets come back redacted and are kept).
    ...(changes.props !== undefined ? { configured_props: { ...propsForUpdate(source.configured_props), ...changes.props } } : {}),
    active: changes.active ?? source.active,
  };
  return (
    await client.request<{ data: SourceView }>("PUT", `/sources/${source.id}`, { body, ...(force ? { query: { force: true } } : {}) })
  ).data;
}

function printRun(out: Output, outcome: RunOutcome): void {
  const status = outcome.ok === false ? out.c.red("failed") : outcome.ok === null ? out.c.yellow("not run") : out.c.green("ok");
  out.line(`Run ${outcome.invocation_id}: ${status}`);
  if (outcome.error) out.line(`  ${out.c.red(`${outcome.error.name}: ${outcome.error.message}`)}`);
  if (outcome.emitted.length) {
    out.line(`  emitted ${outcome.emitted.length} event${outcome.emitted.length > 1 ? "s" : ""}:`);
    for (const e of outcome.emitted) out.line(`    ${e.id}${e.channel ? ` ${out.c.cyan(`[${e.channel}]`)}` : ""}`);
  } else out.line("  emitted nothing");
  for (const line of outcome.logs) out.line(`  ${out.c.dim(line.level.padEnd(6))} ${line.message}`);
  if (outcome.response) out.line(`  response ${outcome.response.status} ${compact(outcome.response.body ?? "")}`);
}

export function sourceCommands(program: Command): void {
  withConnection(
    withProps(
      program
        .command("deploy <target>")
        .description("deploy a component: a file (uploaded with its relative imports), a directory's entry file, or a registry key")
        .option("--entry <file>", "the entry file of a directory (default: its one *.mjs/*.js/*.ts component file)")
        .option("--org <org_id>", "deploy into an organization")
        .option("--update <source>", "update this source (dc_ id or name) with the code instead of creating one"),
    ),
  ).action(
    action(async (context, target: string, options: DeployOptions) => {
      const { out } = context;
      const props = propsFrom(options);
      const client = context.client();
      const spinner = out.spinner(`reading ${target}`);
      let source: SourceView;
      try {
        const { code, describe } = await resolveTarget(target, options.entry);
        if (options.update !== undefined) {
          spinner.update(`updating ${options.update} with ${describe}`);
          const existing = await findSource(client, options.update, options.org);
          source = await putSource(client, existing, {
            code,
            ...(options.name !== undefined ? { name: options.name } : {}),
            ...(props ? { props } : {}),
          });
        } else {
          spinner.update(`deploying ${describe}`);
          const body = {
            ...code,
            ...(options.name !== undefined ? { name: options.name } : {}),
            ...(props ? { configured_props: props } : {}),
          };
          source = (
            await client.request<{ data: SourceView }>("POST", "/sources", {
              body,
              ...(options.org ? { query: { org_id: options.org } } : {}),
            })
          ).data;
        }
      } finally {
        spinner.stop();
      }
      if (out.json) return out.document(source);
      await describeSource(context, source, options.update !== undefined ? "Updated" : "Deployed");
    }),
  );

  withConnection(
    withProps(
      program
        .command("update <source>")
        .description("change a source: its props, name or code (it stays active or paused as it was)")
        .option("--code <target>", "new code: a file, a directory or a registry key, as for deploy")
        .option("--entry <file>", "with --code <directory>: its entry file")
        .option("--org <org_id>", "find the source among an organization's")
        .option("--force", "go on even if a hook throws (the error is logged)"),
    ),
  ).action(
    action(async (context, nameOrId: string, options: UpdateOptions) => {
      const { out } = context;
      const props = propsFrom(options);
      if (options.code === undefined && props === undefined && options.name === undefined) {
        throw usage("nothing to update: give --prop, --props, --name or --code");
      }
      if (options.entry !== undefined && options.code === undefined) throw usage("--entry goes with --code <directory>");
      const client = context.client();
      const spinner = out.spinner(`updating ${nameOrId}`);
      let source: SourceView;
      try {
        const code = options.code !== undefined ? (await resolveTarget(options.code, options.entry)).code : undefined;
        const existing = await findSource(client, nameOrId, options.org);
        source = await putSource(
          client,
          existing,
          { ...(code ? { code } : {}), ...(options.name !== undefined ? { name: options.name } : {}), ...(props ? { props } : {}) },
          options.force === true,
        );
      } finally {
        spinner.stop();
      }
      if (out.json) return out.document(source);
      await describeSource(context, source, "Updated");
    }),
  );

  for (const [name, active] of [
    ["pause", false],
    ["resume", true],
  ] as const) {
    withConnection(
      program
        .command(`${name} <source>`)
        .description(active ? "resume a paused source (PUT active=true)" : "pause a source: no runs until resumed (PUT active=false)")
        .option("--org <org_id>", "find the source among an organization's"),
    ).action(
      action(async (context, nameOrId: string, options: CommonOptions & { org?: string }) => {
        const client = context.client();
        const existing = await findSource(client, nameOrId, options.org);
        const source = await putSource(client, existing, { active });
        if (context.json) return context.out.document(source);
        context.out.line(`${active ? "Resumed" : "Paused"} ${context.out.c.bold(source.name)} ${context.out.c.dim(`(${source.id})`)}`);
      }),
    );
  }

  withConnection(
    program
      .command("delete <source>")
      .description("delete a source with its events, logs, endpoint and timer")
      .option("--force", "delete even if its deactivate hook throws")
      .option("-y, --yes", "do not ask for confirmation on a terminal")
      .option("--org <org_id>", "find the source among an organization's"),
  ).action(
    action(async ({ out, client }, nameOrId: string, options: CommonOptions & { force?: boolean; yes?: boolean; org?: string }) => {
      const api = client();
      const source = await findSource(api, nameOrId, options.org);
      if (!options.yes && !out.json && interactive()) {
        const answer = await askLine(`Delete ${source.name} (${source.id}) and its events? [y/N]`);
        if (!/^y(es)?$/i.test(answer)) {
          out.note("Not deleted.");
          return EXIT.failure;
        }
      }
      await api.request("DELETE", `/sources/${source.id}`, options.force ? { query: { force: true } } : {});
      if (out.json) return out.document({ id: source.id, name: source.name, deleted: true });
      out.line(`Deleted ${out.c.bold(source.name)} ${out.c.dim(`(${source.id})`)}`);
    }),
  );

  withConnection(
    program
      .command("run <source>")
      .description("run a source once now and print the outcome (exit 1 if the run failed)")
      .option("--event <json>", "the event run() receives (JSON when it parses, else text; default {manual: true, timestamp})")
      .option("--org <org_id>", "find the source among an organization's"),
  ).action(
    action(async ({ out, client, json }, nameOrId: string, options: CommonOptions & { event?: string; org?: string }) => {
      const api = client();
      const source = await findSource(api, nameOrId, options.org);
      const spinner = out.spinner(`running ${source.name}`);
      let outcome: RunOutcome;
      try {
        outcome = (
          await api.request<{ data: RunOutcome }>("POST", `/sources/${source.id}/run`, {
            body: options.event !== undefined ? { event: parseLoose(options.event) } : {},
          })
        ).data;
      } finally {
        spinner.stop();
      }
      if (json) out.document(outcome);
      else printRun(out, outcome);
      if (outcome.ok === false) {
        const failure = new CliError(
          "run_failed",
          `the run failed: ${outcome.error ? `${outcome.error.name}: ${outcome.error.message}` : "no detail"}`,
        );
        if (json) out.note(JSON.stringify({ error: failure.message, code: failure.code }));
        return EXIT.failure;
      }
    }),
  );
}
