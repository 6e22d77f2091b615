import { Type } from "@sinclair/typebox";
import { NOT_BLANK } from "../../validation.js";
import { route, type Caller, type Route, queryOrBody } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data, Paged, pageBody } from "../pagination.js";
import { invalid, notFound } from "../../../commands/decider.js";
import type { Webhook as WebhookView } from "../../readModels/webhooks.js";
import type { DeliveryAttempt as AttemptView } from "../../readModels/deliveries.js";

export const Webhook = Type.Object(
  {
    id: Type.String({ description: "wh_ id" }),
    user_id: Type.Optional(Type.String({ description: "who created it (create responses)" })),
    name: Type.Union([Type.String(), Type.Null()]),
    description: Type.Union([Type.String(), Type.Null()]),
    url: Type.String(),
    active: Type.Boolean({ description: "false while paused or disabled" }),
    status: Type.Union([Type.Literal("active"), Type.Literal("paused"), Type.Literal("disabled")], { description: "extension" }),
    disabled_reason: Type.Union([Type.String(), Type.Null()], { description: "why deliveries were stopped (extension)" }),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
  },
  { $id: "Webhook" },
);

export const DeliveryAttempt = Type.Object(
  {
    delivery_id: Type.String({ description: "msg_ id: the webhook-id header, the same on every attempt" }),
    attempt: Type.Integer(),
    status: Type.Union([Type.Literal("delivered"), Type.Literal("failed")]),
    response_code: Type.Union([Type.Integer(), Type.Null()]),
    latency_ms: Type.Integer(),
    error: Type.Union([Type.String(), Type.Null()]),
    attempted_at_ms: Type.Integer(),
    next_attempt_at_ms: Type.Union([Type.Integer(), Type.Null()], { description: "when the next try is due, while it fails" }),
    event_id: Type.String(),
    emitter_id: Type.String(),
    event_name: Type.String(),
    subscription_id: Type.String(),
  },
  { $id: "DeliveryAttempt" },
);

const WEBHOOK_ID = Type.String({ maxLength: 100, description: "wh_ id" });
const fields = {
  url: Type.Optional(Type.String({ maxLength: 2048 })),
  name: Type.Optional(Type.String({ maxLength: 200, pattern: NOT_BLANK })),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
};

export function webhookView(webhook: WebhookView, withUser = false) {
  return {
    id: webhook.id,
    ...(withUser ? { user_id: webhook.creatorId } : {}),
    name: webhook.name,
    description: webhook.description,
    url: webhook.url,
    active: webhook.status === "active",
    status: webhook.status,
    disabled_reason: webhook.disabledReason,
    created_at: webhook.createdAt,
    updated_at: webhook.updatedAt,
  };
}

const attemptView = (a: AttemptView) => ({
  delivery_id: a.deliveryId,
  attempt: a.attempt,
  status: a.ok ? ("delivered" as const) : ("failed" as const),
  response_code: a.status,
  latency_ms: a.latencyMs,
  error: a.error,
  attempted_at_ms: a.at,
  next_attempt_at_ms: a.nextAttemptAt,
  event_id: a.eventId,
  emitter_id: a.emitterId,
  event_name: a.channel,
  subscription_id: a.subscriptionId,
});

type WebhookDeps = Pick<ApiDeps, "access" | "webhooks" | "webhooksView" | "deliveriesView" | "deliveries" | "projector">;

export function webhookRoutes(deps: WebhookDeps): Route[] {
  const visible = (caller: Caller, id: string) =>
    deps.access.visible(caller, /^wh_[0-9a-z]+$/.test(id) ? deps.webhooksView.webhook(id) : undefined, "webhook");
  const current = (id: string) => ({ body: { data: webhookView(deps.webhooksView.webhook(id)!) } });
  const meta = (caller: Caller) => ({ metadata: { by: caller.userId } });
  return [
    route({
      method: "POST",
      path: "/webhooks",
      operationId: "createWebhook",
      summary:
        "Create a webhook: an HTTP(S) endpoint that receives the events of the subscriptions it listens to, signed (Standard Webhooks)",
      tag: "webhooks",
      // The seed passes these in the query string; a JSON body is taken too.
      query: fields,
      body: fields,
      fields: Object.keys(Webhook.properties),
      response: { description: "the webhook", schema: Data(Webhook) },
      async handle({ caller, query, body }) {
        const url = queryOrBody("url", query.url, body.url);
        if (url === undefined) throw invalid("url is required", [{ path: "query.url", message: "is required" }]);
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        const created = await written(
          deps,
          deps.webhooks.create(
            {
              ownerId,
              creatorId: caller.userId,
              url,
              name: queryOrBody("name", query.name, body.name) ?? null,
              description: queryOrBody("description", query.description, body.description) ?? null,
            },
            meta(caller),
          ),
        );
        return { body: { data: webhookView(deps.webhooksView.webhook(created.id)!, true) } };
      },
    }),
    route({
      method: "GET",
      path: "/users/me/webhooks",
      operationId: "listMyWebhooks",
      summary: "The caller's webhooks",
      tag: "webhooks",
      paginated: true,
      fields: Object.keys(Webhook.properties),
      response: { description: "a page of webhooks, oldest first", schema: Paged(Webhook) },
      handle: ({ caller, page }) => ({ body: pageBody(deps.webhooksView.webhooksOf(caller.userId, page), (w) => webhookView(w)) }),
    }),
    route({
      method: "GET",
      path: "/orgs/{org_id}/webhooks",
      operationId: "listOrgWebhooks",
      summary: "An organization's webhooks (members only; extension)",
      tag: "webhooks",
      params: { org_id: Type.String({ maxLength: 100 }) },
      paginated: true,
      fields: Object.keys(Webhook.properties),
      errors: ["not_found"],
      response: { description: "a page of webhooks, oldest first", schema: Paged(Webhook) },
      handle: ({ caller, params, page }) => ({
        body: pageBody(deps.webhooksView.webhooksOf(deps.access.org(caller, params.org_id), page), (w) => webhookView(w)),
      }),
    }),
    route({
      method: "GET",
      path: "/webhooks/{id}",
      operationId: "getWebhook",
      summary: "One webhook (extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID },
      fields: Object.keys(Webhook.properties),
      errors: ["not_found"],
      response: { description: "the webhook", schema: Data(Webhook) },
      handle: ({ caller, params }) => ({ body: { data: webhookView(visible(caller, params.id)) } }),
    }),
    route({
      method: "PUT",
      path: "/webhooks/{id}",
      operationId: "updateWebhook",
      summary: "Change a webhook's url, name or description; active false pauses it, true resumes it (extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID },
      body: {
        url: fields.url,
        name: Type.Optional(Type.Union([Type.String({ maxLength: 200, pattern: NOT_BLANK }), Type.Null()])),
        description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
        active: Type.Optional(Type.Boolean()),
      },
      fields: Object.keys(Webhook.properties),
      errors: ["not_found"],
      response: { description: "the webhook", schema: Data(Webhook) },
      async handle({ caller, params, body }) {
        const webhook = visible(caller, params.id);
        const changes = {
          ...(body.url !== undefined ? { url: body.url } : {}),
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
        };
        await written(deps, deps.webhooks.update(webhook.id, changes, meta(caller)));
        if (body.active === false) await written(deps, deps.webhooks.pause(webhook.id, meta(caller)));
        if (body.active === true) await written(deps, deps.webhooks.resume(webhook.id, meta(caller)));
        return current(webhook.id);
      },
    }),
    route({
      method: "DELETE",
      path: "/webhooks/{id}",
      operationId: "deleteWebhook",
      summary: "Delete a webhook and its subscriptions (extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID },
      errors: ["not_found"],
      response: { status: 204, description: "deleted" },
      async handle({ caller, params }) {
        await written(deps, deps.webhooks.delete(visible(caller, params.id).id, meta(caller)));
        return { status: 204 };
      },
    }),
    ...(["pause", "resume"] as const).map((action) =>
      route({
        method: "POST",
        path: `/webhooks/{id}/${action}`,
        operationId: `${action}Webhook`,
        summary:
          action === "pause"
            ? "Stop sending to a webhook: events meanwhile are not delivered to it (extension)"
            : "Send to a paused or disabled webhook again (extension)",
        tag: "webhooks",
        params: { id: WEBHOOK_ID },
        errors: ["not_found"],
        response: { description: "the webhook", schema: Data(Webhook) },
        async handle({ caller, params }) {
          const webhook = visible(caller, params.id);
          await written(
            deps,
            action === "pause" ? deps.webhooks.pause(webhook.id, meta(caller)) : deps.webhooks.resume(webhook.id, meta(caller)),
          );
          return current(webhook.id);
        },
      }),
    ),
    route({
      method: "GET",
      path: "/webhooks/{id}/secret",
      operationId: "getWebhookSecret",
      summary: "The webhook's signing secret (whsec_…), to verify the webhook-signature header (extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID },
      errors: ["not_found"],
      response: { description: "the secret", schema: Data(Type.Object({ secret: Type.String() })) },
      handle: ({ caller, params }) => ({ body: { data: { secret: deps.webhooks.secretOf(visible(caller, params.id)) } } }),
    }),
    route({
      method: "POST",
      path: "/webhooks/{id}/secret/rotate",
      operationId: "rotateWebhookSecret",
      summary: "A new signing secret; the previous one also signs for 24 hours (extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID },
      errors: ["not_found"],
      response: { description: "the new secret", schema: Data(Type.Object({ secret: Type.String() })) },
      async handle({ caller, params }) {
        const webhook = visible(caller, params.id);
        await written(deps, deps.webhooks.rotateSecret(webhook.id, meta(caller)));
        return { body: { data: { secret: deps.webhooks.secretOf(deps.webhooksView.webhook(webhook.id)!) } } };
      },
    }),
    route({
      method: "GET",
      path: "/webhooks/{id}/deliveries",
      operationId: "listWebhookDeliveries",
      summary: "The webhook's delivery attempts, newest first (the newest 1000 are kept; extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID },
      paginated: true,
      fields: Object.keys(DeliveryAttempt.properties),
      errors: ["not_found"],
      response: { description: "a page of attempts", schema: Paged(DeliveryAttempt) },
      handle: ({ caller, params, page }) => ({
        body: pageBody(deps.deliveriesView.attempts(visible(caller, params.id).id, page), attemptView),
      }),
    }),
    route({
      method: "POST",
      path: "/webhooks/{id}/deliveries/{delivery_id}/resend",
      operationId: "resendWebhookDelivery",
      summary: "Send a delivery again, with the same webhook-id, if its event is still kept (extension)",
      tag: "webhooks",
      params: { id: WEBHOOK_ID, delivery_id: Type.String({ maxLength: 100 }) },
      errors: ["not_found"],
      response: { status: 202, description: "queued for the webhook", schema: Data(Type.Object({ delivery_id: Type.String() })) },
      async handle({ caller, params }) {
        const webhook = visible(caller, params.id);
        const resent = await deps.deliveries.resend(webhook.id, params.delivery_id);
        if (!resent) throw notFound("delivery (or its event, which is no longer kept)");
        return { status: 202, body: { data: { delivery_id: params.delivery_id } } };
      },
    }),
  ];
}
