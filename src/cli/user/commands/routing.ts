// subscribe and webhook create: routing events to listeners (parameters in the query string, as the seed shows).
import type { Command } from "commander";
import type { HeadwaterClient, SubscriptionView, WebhookView } from "../client.js";
import { action, findSource, withConnection, type CommonOptions } from "../common.js";
import { when } from "../output.js";

const olderServer = (route: string) => `this server does not serve ${route} yet: routing events needs a newer Headwater server`;

/** Ids and globs pass as they are; anything else names one of the caller's sources by name_slug. */
async function emitterOrListener(client: HeadwaterClient, value: string, org?: string): Promise<string> {
  if (/^(dc|p|wh)_[0-9a-z]+$/.test(value) || value === "dc_*" || value === "p_*") return value;
  return (await findSource(client, value, org)).id;
}

export function routingCommands(program: Command): void {
  withConnection(
    program
      .command("subscribe")
      .description("route an emitter's events to a listener (POST /v1/subscriptions)")
      .requiredOption("--emitter <id>", "a source (dc_ id or name), a workflow (p_), or a glob: dc_* (all sources), p_* (all workflows)")
      .requiredOption("--listener <id>", "a source (dc_ id or name), a workflow (p_) or a webhook (wh_)")
      .option("--channel <name>", "a channel (event_name): a custom one, $errors or $logs; default: the default channel")
      .option("--org <org_id>", "act in an organization: its sources by name, and the subscription is the organization's"),
  ).action(
    action(async ({ out, client }, options: CommonOptions & { emitter: string; listener: string; channel?: string; org?: string }) => {
      const api = client();
      const emitter = await emitterOrListener(api, options.emitter, options.org);
      const listener = await emitterOrListener(api, options.listener, options.org);
      const answer = await api.request<{ data?: SubscriptionView } | undefined>("POST", "/subscriptions", {
        query: {
          emitter_id: emitter,
          listener_id: listener,
          ...(options.channel !== undefined ? { event_name: options.channel } : {}),
          ...(options.org !== undefined ? { org_id: options.org } : {}),
        },
        missingRoute: olderServer("POST /v1/subscriptions"),
      });
      const subscription = answer?.data ?? { emitter_id: emitter, listener_id: listener, event_name: options.channel ?? "" };
      if (out.json) return out.document(subscription);
      const channel = subscription.event_name ? ` on ${out.c.cyan(subscription.event_name)}` : "";
      out.line(
        `Subscribed ${out.c.bold(subscription.listener_id)} to ${out.c.bold(subscription.emitter_id)}${channel}${subscription.id ? ` ${out.c.dim(`(${subscription.id})`)}` : ""}`,
      );
    }),
  );

  const webhook = program.command("webhook").description("webhooks: HTTP(S) endpoints of yours that receive events");
  withConnection(
    webhook
      .command("create <url>")
      .description("create a webhook (POST /v1/webhooks); subscribe it to an emitter to receive events")
      .option("--name <name>", "its name")
      .option("--description <text>", "its description")
      .option("--org <org_id>", "create it for an organization"),
  ).action(
    action(async ({ out, client }, url: string, options: CommonOptions & { name?: string; description?: string; org?: string }) => {
      const answer = await client().request<{ data: WebhookView }>("POST", "/webhooks", {
        query: { url, name: options.name, description: options.description, org_id: options.org },
        missingRoute: olderServer("POST /v1/webhooks"),
      });
      const created = answer.data;
      if (out.json) return out.document(created);
      out.line(`Created webhook ${out.c.bold(created.id)}`);
      out.fields([
        ["  url", created.url],
        ["  name", created.name ?? undefined],
        ["  description", created.description ?? undefined],
        ["  created", when(created.created_at)],
      ]);
      out.note(out.e.dim(`route events to it: headwater subscribe --emitter <source> --listener ${created.id}`));
    }),
  );
}
