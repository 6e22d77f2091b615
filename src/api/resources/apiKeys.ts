import type { Route } from "../route.js";
import type { Services } from "../services.js";
import { issueKey, revokeKey } from "../../accounts/accounts.js";
import { pageBody, pageInfoSchema } from "../pagination.js";
import { countOf, keysetPage } from "../../readModels/page.js";
import type { ApiKeyRow } from "../../readModels/accounts.js";

// An extension of the seed (which does not say how keys are issued): users manage their own keys.
const keyFields = ["id", "name", "created_at", "api_key"] as const;
const keySchema = {
  type: "object",
  properties: {
    id: { type: "string", description: "k_ id, derived from the key's hash" },
    name: { type: ["string", "null"] },
    created_at: { type: "integer" },
    api_key: { type: "string", description: "the key itself: only in the create response" },
  },
};
const toItem = (row: ApiKeyRow) => ({ id: row.id, name: row.name, created_at: row.created_at });

export function apiKeyRoutes(services: Services): Route[] {
  return [
    {
      method: "GET",
      path: "/users/me/api_keys",
      operationId: "listApiKeys",
      summary: "The caller's usable API keys (extension)",
      tag: "api keys",
      paginated: true,
      fields: keyFields,
      response: {
        description: "a page of keys, oldest first",
        schema: { type: "object", properties: { page_info: pageInfoSchema, data: { type: "array", items: keySchema } } },
      },
      handle({ caller, page }) {
        const result = keysetPage<ApiKeyRow>(services.db, {
          from: "api_keys", where: "user_id = ? AND revoked_at IS NULL", params: [caller.userId], order: "asc",
          total: countOf(services.db, "api_key_counts", caller.userId),
        }, page);
        return { body: pageBody(result, toItem) };
      },
    },
    {
      method: "POST",
      path: "/users/me/api_keys",
      operationId: "createApiKey",
      summary: "Issue a new API key for the caller; the key is shown once (extension)",
      tag: "api keys",
      body: { type: "object", properties: { name: { type: "string", maxLength: 200 } }, additionalProperties: false },
      fields: keyFields,
      response: { description: "the new key", schema: { type: "object", properties: { data: keySchema } } },
      async handle({ caller, body }) {
        const issued = await services.written(
          issueKey({ store: services.store, clock: services.clock, metadata: { by: caller.userId } }, caller.userId, {
            name: (body.name as string | undefined) ?? null,
          }),
        );
        const row = services.accounts.apiKey(issued.id)!;
        return { body: { data: { ...toItem(row), api_key: issued.apiKey } } };
      },
    },
    {
      method: "DELETE",
      path: "/users/me/api_keys/{id}",
      operationId: "revokeApiKey",
      summary: "Revoke one of the caller's keys (extension)",
      tag: "api keys",
      params: { id: { type: "string", maxLength: 100 } },
      response: { status: 204, description: "revoked" },
      async handle({ caller, params }) {
        await services.written(
          revokeKey({ store: services.store, clock: services.clock, metadata: { by: caller.userId } }, params.id as string, caller.userId),
        );
        return { status: 204 };
      },
    },
  ];
}
