// `headwater account create | list | get | delete`: connected accounts (app credentials that
// sources bind as configured_props.<app> = {authProvisionId}) over the REST API, with the user
// commands' profile, options (--api-url/--api-key, HEADWATER_API_URL/HEADWATER_API_KEY, --json),
// output and exit statuses. Credentials are sent once and never shown: only their field names.
import { InvalidArgumentError, type Command } from "commander";
import { action, withConnection, type CommonOptions } from "./user/common.js";
import { when, type Output } from "./user/output.js";
import type { Paged } from "./user/client.js";
import { usage } from "./failure.js";

/** `--limit`: checked here, so a value that does not parse is a usage error (exit 2), not a server refusal. */
function pageSize(value: string): string {
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 100) throw new InvalidArgumentError("a number from 1 to 100");
  return value;
}

/** A connected account as the API answers it. */
export interface ConnectedAccountView {
  id: string;
  app: string;
  name: string | null;
  owner_id: string;
  auth_fields: string[];
  created_at: number;
}

const olderServer = (route: string) => `this server does not serve ${route}: it predates connected accounts`;

function parseAuth(text: string): Record<string, unknown> {
  let auth: unknown;
  try {
    auth = JSON.parse(text);
  } catch {
    throw usage(`--auth must be a JSON object, e.g. '{"api_key": "…"}'`);
  }
  if (typeof auth !== "object" || auth === null || Array.isArray(auth)) throw usage("--auth must be a JSON object of credential fields");
  return auth as Record<string, unknown>;
}

function show(out: Output, account: ConnectedAccountView): void {
  out.fields([
    ["  app", account.app],
    ["  name", account.name ?? undefined],
    ["  owner", account.owner_id],
    ["  credentials", account.auth_fields.join(", ")],
    ["  created", when(account.created_at)],
  ]);
}

export function connectedAccountCommands(program: Command): void {
  const account = program
    .command("account")
    .description("connected accounts: app credentials that sources bind as configured_props.<app> = {authProvisionId}");

  withConnection(
    account
      .command("create")
      .description("connect an account (POST /v1/accounts): its credentials are sealed at rest and never shown again")
      .requiredOption("--app <slug>", "the app's name slug, as app props name it (github, slack, …)")
      .requiredOption("--auth <json>", `the credentials as JSON, e.g. '{"api_key": "…"}'`)
      .option("--name <name>", "a name to tell accounts of one app apart")
      .option("--org <org_id>", "create it for an organization"),
  ).action(
    action(async ({ out, client }, options: CommonOptions & { app: string; auth: string; name?: string; org?: string }) => {
      const auth = parseAuth(options.auth);
      const created = (
        await client().request<{ data: ConnectedAccountView }>("POST", "/accounts", {
          body: {
            app: options.app,
            auth,
            ...(options.name !== undefined ? { name: options.name } : {}),
            ...(options.org !== undefined ? { org_id: options.org } : {}),
          },
          missingRoute: olderServer("POST /v1/accounts"),
        })
      ).data;
      if (out.json) return out.document(created);
      out.line(`Connected account ${out.c.bold(created.id)}`);
      show(out, created);
      out.note(out.e.dim(`bind it: --prop '${created.app}={"authProvisionId":"${created.id}"}'`));
    }),
  );

  withConnection(
    account
      .command("list")
      .description("list connected accounts (yours, or an organization's), oldest first")
      .option("--org <org_id>", "an organization's accounts")
      .option("--limit <n>", "page size, 1 to 100", pageSize)
      .option("--after <cursor>", "the page after this cursor (page_info.end_cursor of the previous page)"),
  ).action(
    action(async ({ out, client }, options: CommonOptions & { org?: string; limit?: string; after?: string }) => {
      const path = options.org !== undefined ? `/orgs/${encodeURIComponent(options.org)}/accounts` : "/users/me/accounts";
      const page = await client().get<Paged<ConnectedAccountView>>(
        path,
        { limit: options.limit, after: options.after },
        olderServer(`GET /v1${path}`),
      );
      if (out.json) return out.document(page);
      out.table(
        ["ID", "APP", "NAME", "CREDENTIALS", "CREATED"],
        page.data.map((a) => [a.id, a.app, a.name ?? "", a.auth_fields.join(","), when(a.created_at)]),
      );
      if (page.page_info.count < page.page_info.total_count && page.page_info.end_cursor) {
        out.note(out.e.dim(`more: headwater account list --after ${page.page_info.end_cursor}`));
      }
    }),
  );

  withConnection(account.command("get <id>").description("one connected account (GET /v1/accounts/{id}), without its credentials")).action(
    action(async ({ out, client }, id: string) => {
      const found = (
        await client().get<{ data: ConnectedAccountView }>(
          `/accounts/${encodeURIComponent(id)}`,
          undefined,
          olderServer("GET /v1/accounts"),
        )
      ).data;
      if (out.json) return out.document(found);
      out.line(out.c.bold(found.id));
      show(out, found);
    }),
  );

  withConnection(
    account.command("delete <id>").description("delete a connected account (DELETE /v1/accounts/{id}); refused while sources bind it"),
  ).action(
    action(async ({ out, client }, id: string) => {
      await client().request("DELETE", `/accounts/${encodeURIComponent(id)}`, { missingRoute: olderServer("DELETE /v1/accounts") });
      if (out.json) return out.document({ deleted: id });
      out.line(`Deleted account ${out.c.bold(id)}`);
    }),
  );
}
