// What every user command shares: the connection options, --json, the way an action ends (its
// output, then exit), and the helpers to name a source and parse props.
import { Option, type Command } from "commander";
import { HeadwaterClient, type SourceView } from "./client.js";
import { Output } from "./output.js";
import { resolveConnection, type ConnectionOptions } from "./profile.js";
import { CliError, EXIT, exitWith, usage } from "../failure.js";

export interface CommonOptions extends ConnectionOptions {
  readonly json?: boolean;
}

export interface Context {
  readonly out: Output;
  readonly json: boolean;
  /** A client for the resolved profile (fails with exit 3 when there is none). */
  readonly client: () => HeadwaterClient;
}

/** The options every user command takes. */
export function withConnection(command: Command): Command {
  return command
    .addOption(new Option("--api-url <url>", "the server (default: the profile's, or HEADWATER_API_URL)"))
    .addOption(new Option("--api-key <key>", "the API key (default: the profile's, or HEADWATER_API_KEY)"))
    .addOption(new Option("--profile <name>", "the profile to use (default: HEADWATER_PROFILE, or default)"))
    .addOption(new Option("--json", "print one JSON document on stdout (errors as JSON on stderr)"));
}

/**
 * Runs a user command's action: builds its context, and exits once it is done (0, or the status
 * its error says). Keep-alive sockets would otherwise hold the process for seconds.
 */
export function action<Args extends unknown[]>(run: (context: Context, ...args: Args) => Promise<number | void>) {
  return async (...args: unknown[]): Promise<void> => {
    const command = args[args.length - 1] as Command;
    const options = command.opts<CommonOptions>();
    const json = options.json === true;
    const out = new Output(json);
    let client: HeadwaterClient | undefined;
    const context: Context = {
      out,
      json,
      client: () => (client ??= new HeadwaterClient(resolveConnection(options))),
    };
    let status: number | void;
    try {
      status = await run(context, ...(args.slice(0, -1) as Args));
    } catch (error) {
      exitWith(error, json, out.e.red);
    }
    process.exit(status ?? EXIT.ok);
  };
}

/** `--prop key=value`, repeatable: the value as JSON when it parses, else the text. */
export function collectProp(value: string, previous: Record<string, unknown> = {}): Record<string, unknown> {
  const at = value.indexOf("=");
  if (at <= 0) throw usage(`--prop takes key=value, got "${value}"`);
  return { ...previous, [value.slice(0, at)]: parseLoose(value.slice(at + 1)) };
}

/** JSON when it parses (numbers, booleans, objects, quoted strings), else the text as it is. */
export function parseLoose(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** `--props '{json}'` merged under the `--prop` values. */
export function propsFrom(options: { props?: string; prop?: Record<string, unknown> }): Record<string, unknown> | undefined {
  let props: Record<string, unknown> | undefined;
  if (options.props !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(options.props);
    } catch (error) {
      throw usage(`--props is not JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw usage("--props must be a JSON object");
    props = parsed as Record<string, unknown>;
  }
  if (options.prop !== undefined) props = { ...(props ?? {}), ...options.prop };
  return props;
}

export const isSourceId = (value: string) => /^dc_[0-9a-z]+$/.test(value);

/** The caller's sources (or an organization's), every page. */
export function sourcesOf(client: HeadwaterClient, org?: string): Promise<SourceView[]> {
  return client.all<SourceView>(org ? `/orgs/${encodeURIComponent(org)}/sources` : "/users/me/sources");
}

/** A source named by its dc_ id, or by the name_slug (or exact name) of one of the caller's sources. */
export async function findSource(client: HeadwaterClient, nameOrId: string, org?: string): Promise<SourceView> {
  if (isSourceId(nameOrId)) return (await client.get<{ data: SourceView }>(`/sources/${nameOrId}`)).data;
  const sources = await sourcesOf(client, org);
  const bySlug = sources.find((s) => s.name_slug === nameOrId);
  const byName = sources.filter((s) => s.name === nameOrId);
  // Names are not unique (slugs are): never pick one of several at random, e.g. for `delete`.
  if (!bySlug && byName.length > 1) {
    throw usage(
      `${byName.length} sources are named "${nameOrId}": ${byName.map((s) => `${s.id} (${s.name_slug})`).join(", ")}; give its dc_ id or its name_slug`,
    );
  }
  const found = bySlug ?? byName[0];
  if (!found) {
    throw new CliError(
      "not_found",
      `no source named "${nameOrId}" among ${org ? `the sources of ${org}` : "your sources"} (give its dc_ id, or its name_slug: see \`headwater list sources\`)`,
      EXIT.notFound,
    );
  }
  return found;
}

/** The endpoint URL of an HTTP source, if it has one. */
export function endpointOf(source: SourceView): string | undefined {
  for (const value of Object.values(source.configured_props ?? {})) {
    const url = (value as { endpoint_url?: unknown } | null)?.endpoint_url;
    if (typeof url === "string") return url;
  }
  return undefined;
}

/** Configured props as the API shows them, turned back into what PUT accepts (timers as intervalSeconds or cron). */
export function propsForUpdate(view: Record<string, unknown>): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(view)) {
    const v = value as Record<string, unknown> | null;
    if (v && typeof v === "object" && !Array.isArray(v)) {
      if ("endpoint_url" in v && Object.keys(v).length === 1) continue; // the HTTP interface: nothing to configure
      const keys = Object.keys(v).filter((k) => k !== "timezone");
      if ("interval_seconds" in v && "cron" in v && keys.length === 2) {
        props[name] =
          typeof v.cron === "string"
            ? { cron: v.cron, ...(typeof v.timezone === "string" ? { timezone: v.timezone } : {}) }
            : { intervalSeconds: v.interval_seconds };
        continue;
      }
    }
    props[name] = value;
  }
  return props;
}
