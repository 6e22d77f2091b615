// list sources | components | webhooks | subscriptions
import type { Command } from "commander";
import type { ComponentView, SourceView, SubscriptionView, WebhookView } from "../client.js";
import { action, endpointOf, sourcesOf, withConnection, type CommonOptions } from "../common.js";
import { when } from "../output.js";

type ListOptions = CommonOptions & { org?: string };

const olderServer = (what: string, route: string) => `this server does not serve ${route}: ${what} need a newer Headwater server`;

export function listCommands(program: Command): void {
  const list = program.command("list").description("list sources, components, webhooks or subscriptions");

  withConnection(
    list
      .command("sources")
      .description("your sources (every page), or an organization's with --org")
      .option("--org <org_id>", "an organization's sources"),
  ).action(
    action(async ({ out, client }, options: ListOptions) => {
      const sources = await sourcesOf(client(), options.org);
      if (out.json) return out.document(sources);
      if (sources.length === 0) return out.line("No sources. Deploy one with `headwater deploy <file|dir|registry key>`.");
      out.table(
        ["ID", "NAME", "STATUS", "COMPONENT", "ENDPOINT", "CREATED"],
        sources.map((s: SourceView) => [
          s.id,
          s.name_slug,
          s.active ? out.c.green("active") : out.c.yellow("paused"),
          s.component_id,
          endpointOf(s) ?? "",
          when(s.created_at),
        ]),
      );
    }),
  );

  withConnection(
    list
      .command("components")
      .description("the components your sources run (or an organization's sources with --org)")
      .option("--org <org_id>", "an organization's sources"),
  ).action(
    action(async ({ out, client }, options: ListOptions) => {
      const api = client();
      const sources = await sourcesOf(api, options.org);
      const usedBy = new Map<string, string[]>();
      for (const s of sources) usedBy.set(s.component_id, [...(usedBy.get(s.component_id) ?? []), s.id]);
      const components = await Promise.all(
        [...usedBy.keys()].map(async (id) => (await api.get<{ data: ComponentView }>(`/components/${id}`)).data),
      );
      const rows = components.map(({ code: _code, ...c }) => ({ ...c, sources: usedBy.get(c.id) ?? [] }));
      if (out.json) return out.document(rows);
      if (rows.length === 0) return out.line("No components: none of your sources is deployed yet.");
      out.table(
        ["ID", "KEY", "NAME", "VERSION", "SOURCES", "SAVED"],
        rows.map((c) => [c.id, c.key ?? "", c.name, c.version, String(c.sources.length), when(c.created_at)]),
      );
    }),
  );

  withConnection(
    list
      .command("webhooks")
      .description("your webhooks, or an organization's (every page)")
      .option("--org <org_id>", "an organization's webhooks"),
  ).action(
    action(async ({ out, client }, options: CommonOptions & { org?: string }) => {
      const path = options.org ? `/orgs/${encodeURIComponent(options.org)}/webhooks` : "/users/me/webhooks";
      const webhooks = await client().all<WebhookView>(path, {}, olderServer("webhooks", `GET /v1${path}`));
      if (out.json) return out.document(webhooks);
      if (webhooks.length === 0) return out.line("No webhooks. Create one with `headwater webhook create <url>`.");
      out.table(
        ["ID", "NAME", "URL", "STATUS", "CREATED"],
        webhooks.map((w) => [w.id, w.name ?? "", w.url, w.active ? out.c.green("active") : out.c.yellow("inactive"), when(w.created_at)]),
      );
    }),
  );

  withConnection(
    list
      .command("subscriptions")
      .description("your subscriptions (or an organization's with --org)")
      .option("--org <org_id>", "an organization's subscriptions"),
  ).action(
    action(async ({ out, client }, options: ListOptions) => {
      const path = options.org ? `/orgs/${encodeURIComponent(options.org)}/subscriptions` : "/users/me/subscriptions";
      const answer = await client().get<{ data: SubscriptionView[] }>(path, undefined, olderServer("subscriptions", `GET /v1${path}`));
      const subscriptions = answer.data ?? [];
      if (out.json) return out.document(subscriptions);
      if (subscriptions.length === 0) return out.line("No subscriptions. Create one with `headwater subscribe --emitter … --listener …`.");
      out.table(
        ["ID", "EMITTER", "LISTENER", "CHANNEL"],
        subscriptions.map((s) => [s.id ?? "", s.emitter_id, s.listener_id, s.event_name === "" ? out.c.dim("(default)") : s.event_name]),
      );
    }),
  );
}
