import { Type } from "@sinclair/typebox";
import { route, type Caller, type Route, queryOrBody } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data } from "../pagination.js";
import { invalid } from "../../../commands/decider.js";
import type { Subscription as SubscriptionView, AutoSubscription as AutoSubscriptionView } from "../../readModels/subscriptions.js";

export const Subscription = Type.Object(
  {
    id: Type.String({ description: "sub_ id" }),
    emitter_id: Type.String({
      description: "a source (dc_…) or workflow (p_…) id, or a glob: dc_* (all your sources), p_* (all your workflows)",
    }),
    listener_id: Type.String({ description: "a source, workflow or webhook (wh_…) id" }),
    event_name: Type.String({ description: "the channel: empty for the default channel, a name, $errors or $logs" }),
  },
  { $id: "Subscription" },
);

export const AutoSubscription = Type.Object(
  {
    id: Type.String({ description: "asub_ id" }),
    event_name: Type.Union([Type.Literal("$errors"), Type.Literal("$logs")]),
    listener_id: Type.String(),
  },
  { $id: "AutoSubscription" },
);

const view = (s: SubscriptionView) => ({ id: s.id, emitter_id: s.emitterId, listener_id: s.listenerId, event_name: s.eventName });
const autoView = (a: AutoSubscriptionView) => ({ id: a.id, event_name: a.eventName, listener_id: a.listenerId });

// The seed passes these in the query string; a JSON body with the same fields is taken too.
const triple = {
  emitter_id: Type.Optional(Type.String({ maxLength: 100, description: "required (query string or body)" })),
  listener_id: Type.Optional(Type.String({ maxLength: 100, description: "required (query string or body)" })),
  event_name: Type.Optional(Type.String({ maxLength: 200, description: "the channel; empty or absent for the default channel" })),
};

type Triple = { emitter_id?: string | undefined; listener_id?: string | undefined; event_name?: string | undefined };

function tripleOf(query: Triple, body: Triple, required: readonly ("emitter_id" | "listener_id")[]) {
  const value = {
    emitter_id: queryOrBody("emitter_id", query.emitter_id, body.emitter_id),
    listener_id: queryOrBody("listener_id", query.listener_id, body.listener_id),
    event_name: queryOrBody("event_name", query.event_name, body.event_name) ?? "",
  };
  const missing = required.filter((name) => value[name] === undefined || value[name] === "");
  if (missing.length > 0)
    throw invalid(
      `${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} required`,
      missing.map((name) => ({ path: `query.${name}`, message: "is required" })),
    );
  return value as { emitter_id: string; listener_id: string; event_name: string };
}

type SubscriptionDeps = Pick<ApiDeps, "access" | "subscriptions" | "subscriptionsView" | "projector">;

/** The subscriptions of one owner: every one (the seed shows them unpaginated), oldest first. */
function everySubscription(deps: SubscriptionDeps, ownerId: string): SubscriptionView[] {
  const all: SubscriptionView[] = [];
  let after: number | undefined;
  for (;;) {
    const page = deps.subscriptionsView.subscriptionsOf(ownerId, { limit: 1000, ...(after !== undefined ? { after } : {}) });
    all.push(...page.rows);
    if (page.rows.length < 1000) return all;
    after = page.rows[page.rows.length - 1].seq;
  }
}

export function subscriptionRoutes(deps: SubscriptionDeps): Route[] {
  const canSee = (caller: Caller) => (ownerId: string) => deps.access.canSee(caller, ownerId);
  const list = (caller: Caller, ownerId: string) => ({ body: { data: everySubscription(deps, ownerId).map(view) } });
  return [
    route({
      method: "POST",
      path: "/subscriptions",
      operationId: "createSubscription",
      summary: "Route an emitter's events (one channel) to a listener; the same triple again is the same subscription",
      tag: "subscriptions",
      query: triple,
      body: triple,
      fields: Object.keys(Subscription.properties),
      errors: ["not_found"],
      response: { description: "the subscription", schema: Data(Subscription) },
      async handle({ caller, query, body }) {
        const t = tripleOf(query, body, ["emitter_id", "listener_id"]);
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        const created = await written(
          deps,
          deps.subscriptions.create(
            {
              ownerId,
              emitterId: t.emitter_id,
              listenerId: t.listener_id,
              eventName: t.event_name,
              canSee: canSee(caller),
              by: caller.userId,
            },
            { metadata: { by: caller.userId } },
          ),
        );
        return { body: { data: { id: created.id, emitter_id: t.emitter_id, listener_id: t.listener_id, event_name: t.event_name } } };
      },
    }),
    route({
      method: "DELETE",
      path: "/subscriptions",
      operationId: "deleteSubscription",
      summary: "Remove the subscription of this triple (event_name empty for the default channel)",
      tag: "subscriptions",
      query: triple,
      errors: ["not_found"],
      response: { status: 204, description: "deleted" },
      async handle({ caller, query }) {
        const t = tripleOf(query, {}, ["emitter_id", "listener_id"]);
        const ownerId = deps.access.ownerForCreate(caller, query.org_id);
        await written(
          deps,
          deps.subscriptions.delete(
            { ownerId, emitterId: t.emitter_id, listenerId: t.listener_id, eventName: t.event_name },
            { metadata: { by: caller.userId } },
          ),
        );
        return { status: 204 };
      },
    }),
    route({
      method: "GET",
      path: "/users/me/subscriptions",
      operationId: "listMySubscriptions",
      summary: "The caller's subscriptions (every one, oldest first)",
      tag: "subscriptions",
      fields: Object.keys(Subscription.properties),
      response: { description: "the subscriptions", schema: Data(Type.Array(Subscription)) },
      handle: ({ caller }) => list(caller, caller.userId),
    }),
    route({
      method: "GET",
      path: "/orgs/{org_id}/subscriptions",
      operationId: "listOrgSubscriptions",
      summary: "An organization's subscriptions (members only)",
      tag: "subscriptions",
      params: { org_id: Type.String({ maxLength: 100 }) },
      fields: Object.keys(Subscription.properties),
      errors: ["not_found"],
      response: { description: "the subscriptions", schema: Data(Type.Array(Subscription)) },
      handle: ({ caller, params }) => list(caller, deps.access.org(caller, params.org_id)),
    }),
    route({
      method: "POST",
      path: "/auto_subscriptions",
      operationId: "createAutoSubscription",
      summary: "Subscribe a listener to $errors or $logs of every source and workflow created from now on",
      tag: "subscriptions",
      query: { event_name: triple.event_name, listener_id: triple.listener_id },
      body: { event_name: triple.event_name, listener_id: triple.listener_id },
      errors: ["not_found"],
      response: { description: "the auto-subscription", schema: Data(AutoSubscription) },
      async handle({ caller, query, body }) {
        const eventName = queryOrBody("event_name", query.event_name, body.event_name);
        const listenerId = queryOrBody("listener_id", query.listener_id, body.listener_id);
        if (!eventName || !listenerId) {
          throw invalid("event_name and listener_id are required", [
            ...(eventName ? [] : [{ path: "query.event_name", message: "is required ($errors or $logs)" }]),
            ...(listenerId ? [] : [{ path: "query.listener_id", message: "is required" }]),
          ]);
        }
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        const created = await written(
          deps,
          deps.subscriptions.createAuto(
            { ownerId, eventName, listenerId, canSee: canSee(caller), by: caller.userId },
            { metadata: { by: caller.userId } },
          ),
        );
        return { body: { data: { id: created.id, event_name: eventName, listener_id: listenerId } } };
      },
    }),
    route({
      method: "GET",
      path: "/users/me/auto_subscriptions",
      operationId: "listMyAutoSubscriptions",
      summary: "The caller's auto-subscriptions (extension)",
      tag: "subscriptions",
      response: { description: "the auto-subscriptions", schema: Data(Type.Array(AutoSubscription)) },
      handle: ({ caller }) => ({ body: { data: deps.subscriptionsView.autoSubscriptionsOf(caller.userId).map(autoView) } }),
    }),
    route({
      method: "DELETE",
      path: "/auto_subscriptions",
      operationId: "deleteAutoSubscription",
      summary: "Stop an auto-subscription for emitters created from now on (extension; subscriptions it made stay)",
      tag: "subscriptions",
      query: { event_name: triple.event_name, listener_id: triple.listener_id },
      errors: ["not_found"],
      response: { status: 204, description: "deleted" },
      async handle({ caller, query }) {
        if (!query.event_name || !query.listener_id) throw invalid("event_name and listener_id are required");
        const ownerId = deps.access.ownerForCreate(caller, query.org_id);
        await written(
          deps,
          deps.subscriptions.deleteAuto(
            { ownerId, eventName: query.event_name, listenerId: query.listener_id },
            { metadata: { by: caller.userId } },
          ),
        );
        return { status: 204 };
      },
    }),
  ];
}
