// `headwater account …`: connected accounts through the REST API (POST /v1/accounts and friends),
// so it works against any node. Where to reach it: --api-url / --api-key, else HEADWATER_API_URL /
// HEADWATER_API_KEY. Prints one JSON document on stdout; a failure prints {"error", "code"} on
// stderr and exits 1, as the operator commands do.
import type { Command } from "commander";
import { DomainError } from "../../commands/decider.js";
import { ERROR_CODES, type ErrorCode } from "../../commands/errors.js";
import { failWith, printJson } from "./output.js";

interface ApiOptions {
  apiUrl?: string;
  apiKey?: string;
}

/** The API's base with its version prefix: http://host:port → http://host:port/v1. */
export function apiBase(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  return /\/v1$/.test(trimmed) ? trimmed : `${trimmed}/v1`;
}

function target(options: ApiOptions): { base: string; key: string } {
  const url = options.apiUrl ?? process.env.HEADWATER_API_URL;
  const key = options.apiKey ?? process.env.HEADWATER_API_KEY;
  if (!url) throw new DomainError("usage", "give the API's address with --api-url or HEADWATER_API_URL");
  if (!key) throw new DomainError("usage", "give an API key with --api-key or HEADWATER_API_KEY");
  return { base: apiBase(url), key };
}

async function call(options: ApiOptions, method: string, path: string, body?: unknown): Promise<unknown> {
  const { base, key } = target(options);
  let response: Response;
  try {
    response = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (error) {
    throw new DomainError("unavailable", `cannot reach ${base}: ${(error as Error).message}`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const answer = (typeof parsed === "object" && parsed !== null ? parsed : {}) as { error?: string; code?: string };
    const code = ERROR_CODES.includes(answer.code as ErrorCode) ? (answer.code as ErrorCode) : "internal";
    throw new DomainError(code, answer.error ?? `the API answered ${response.status}`);
  }
  return parsed;
}

function parseAuth(text: string): Record<string, unknown> {
  let auth: unknown;
  try {
    auth = JSON.parse(text);
  } catch {
    throw new DomainError("usage", `--auth must be a JSON object, e.g. '{"api_key": "…"}'`);
  }
  if (typeof auth !== "object" || auth === null || Array.isArray(auth)) throw new DomainError("usage", "--auth must be a JSON object");
  return auth as Record<string, unknown>;
}

/** Registers `account create | list | get | delete` on a program. */
export function accountCommands(program: Command): void {
  const account = program
    .command("account")
    .description("connected accounts: app credentials that sources bind as configured_props.<app> = {authProvisionId}")
    .option("--api-url <url>", "the API's address (default: HEADWATER_API_URL)")
    .option("--api-key <key>", "an API key (default: HEADWATER_API_KEY)");
  const api = (cmd: Command): ApiOptions => cmd.optsWithGlobals();
  const run = (action: () => Promise<unknown>) =>
    Promise.resolve()
      .then(action)
      .then(
        (value) => {
          if (value !== undefined) printJson(value);
        },
        (error: unknown) => failWith(error),
      );

  account
    .command("create")
    .description("connect an account: its credentials are sealed at rest and never shown again")
    .requiredOption("--app <slug>", "the app's name slug (github, slack, …)")
    .requiredOption("--auth <json>", `the credentials as JSON, e.g. '{"api_key": "…"}'`)
    .option("--name <name>", "a name to tell accounts of one app apart")
    .option("--org <org_id>", "create it for an organization")
    .action((opts: { app: string; auth: string; name?: string; org?: string }, cmd: Command) =>
      run(() =>
        call(api(cmd), "POST", "/accounts", {
          app: opts.app,
          auth: parseAuth(opts.auth),
          ...(opts.name !== undefined ? { name: opts.name } : {}),
          ...(opts.org !== undefined ? { org_id: opts.org } : {}),
        }),
      ),
    );

  account
    .command("list")
    .description("list connected accounts (yours, or an organization's)")
    .option("--org <org_id>", "an organization's accounts")
    .option("--limit <n>", "page size, 1 to 100")
    .option("--after <cursor>", "the page after this cursor (page_info.end_cursor)")
    .action((opts: { org?: string; limit?: string; after?: string }, cmd: Command) => {
      const query = new URLSearchParams();
      if (opts.limit !== undefined) query.set("limit", opts.limit);
      if (opts.after !== undefined) query.set("after", opts.after);
      const path = opts.org !== undefined ? `/orgs/${encodeURIComponent(opts.org)}/accounts` : "/users/me/accounts";
      return run(() => call(api(cmd), "GET", `${path}${query.size > 0 ? `?${query.toString()}` : ""}`));
    });

  account
    .command("get <id>")
    .description("one connected account (without its credentials)")
    .action((id: string, _opts: unknown, cmd: Command) => run(() => call(api(cmd), "GET", `/accounts/${encodeURIComponent(id)}`)));

  account
    .command("delete <id>")
    .description("delete a connected account (refused while sources bind it)")
    .action((id: string, _opts: unknown, cmd: Command) =>
      run(async () => {
        await call(api(cmd), "DELETE", `/accounts/${encodeURIComponent(id)}`);
        return { deleted: id };
      }),
    );
}
