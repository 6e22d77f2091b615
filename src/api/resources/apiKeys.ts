import { Type } from "@sinclair/typebox";
import { route, type Route } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data, Paged, pageBody } from "../pagination.js";
import type { ApiKey as ApiKeyView } from "../../readModels/accounts.js";

// An extension of the seed (which does not say how keys are issued): users manage their own keys.
export const ApiKey = Type.Object(
  {
    id: Type.String({ description: "k_ id, derived from the key's hash" }),
    name: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.Integer(),
    api_key: Type.Optional(Type.String({ description: "the key itself: only in the create response" })),
  },
  { $id: "ApiKey" },
);
const toItem = (key: ApiKeyView) => ({ id: key.id, name: key.name, created_at: key.createdAt });

export function apiKeyRoutes(deps: Pick<ApiDeps, "accounts" | "accountsView" | "projector">): Route[] {
  return [
    route({
      method: "GET",
      path: "/users/me/api_keys",
      operationId: "listApiKeys",
      summary: "The caller's usable API keys (extension)",
      tag: "api keys",
      paginated: true,
      fields: Object.keys(ApiKey.properties),
      response: { description: "a page of keys, oldest first", schema: Paged(ApiKey) },
      handle: ({ caller, page }) => ({ body: pageBody(deps.accountsView.apiKeysOf(caller.userId, page), toItem) }),
    }),
    route({
      method: "POST",
      path: "/users/me/api_keys",
      operationId: "createApiKey",
      summary: "Issue a new API key for the caller; the key is shown once (extension)",
      tag: "api keys",
      body: { name: Type.Optional(Type.String({ maxLength: 200 })) },
      fields: Object.keys(ApiKey.properties),
      response: { description: "the new key", schema: Data(ApiKey) },
      async handle({ caller, body }) {
        const issued = await written(
          deps,
          deps.accounts.issueKey(caller.userId, { name: body.name ?? null }, { metadata: { by: caller.userId } }),
        );
        return { body: { data: { ...toItem(deps.accountsView.apiKey(issued.id)!), api_key: issued.apiKey } } };
      },
    }),
    route({
      method: "DELETE",
      path: "/users/me/api_keys/{id}",
      operationId: "revokeApiKey",
      summary: "Revoke one of the caller's keys (extension)",
      tag: "api keys",
      params: { id: Type.String({ maxLength: 100 }) },
      errors: ["not_found"],
      response: { status: 204, description: "revoked" },
      async handle({ caller, params }) {
        await written(deps, deps.accounts.revokeKey(params.id, caller.userId, { metadata: { by: caller.userId } }));
        return { status: 204 };
      },
    }),
  ];
}
