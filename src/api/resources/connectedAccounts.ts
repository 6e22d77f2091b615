import { Type } from "@sinclair/typebox";
import { NOT_BLANK } from "../../validation.js";
import { route, type Caller, type Route, queryOrBody } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data, Paged, pageBody } from "../pagination.js";
import type { ConnectedAccount as AccountView } from "../../readModels/connectedAccounts.js";

// An extension of the seed (Pipedream's Connect API has accounts; the seed has none): app
// credentials kept once, bound into sources as configured_props.<app> = {"authProvisionId": "apn_…"}.
// Credentials are never answered: only the names of their fields.
export const ConnectedAccount = Type.Object(
  {
    id: Type.String({ description: "apn_ id" }),
    app: Type.String({ description: "the app's name slug" }),
    name: Type.Union([Type.String(), Type.Null()]),
    owner_id: Type.String({ description: "the user or org it belongs to" }),
    auth_fields: Type.Array(Type.String(), { description: "the names of its credential fields (never their values)" }),
    created_at: Type.Integer(),
  },
  { $id: "ConnectedAccount" },
);

const ACCOUNT_ID = Type.String({ maxLength: 100, description: "apn_ id" });

const toItem = (account: AccountView) => ({
  id: account.id,
  app: account.app,
  name: account.name,
  owner_id: account.ownerId,
  auth_fields: [...account.fields],
  created_at: account.createdAt,
});

type AccountDeps = Pick<ApiDeps, "access" | "connectedAccounts" | "connectedAccountsView" | "projector">;

/** The account the caller may see, else the same 404 as an unknown id (another user's never leaks). */
function visibleAccount(deps: AccountDeps, caller: Caller, id: string): AccountView {
  return deps.access.visible(caller, /^apn_[0-9a-z]+$/.test(id) ? deps.connectedAccountsView.account(id) : undefined, "account");
}

export function connectedAccountRoutes(deps: AccountDeps): Route[] {
  const fields = Object.keys(ConnectedAccount.properties);
  return [
    route({
      method: "POST",
      path: "/accounts",
      operationId: "createAccount",
      summary: "Connect an account: an app's credentials, sealed at rest, bound into sources by id (extension)",
      tag: "accounts",
      body: {
        app: Type.String({ minLength: 1, maxLength: 100, description: "the app's name slug, as app props name it (github, slack, …)" }),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK })),
        auth: Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
          description: "the credentials the app's code reads as this.<app>.$auth (api_key, oauth_access_token, …)",
        }),
      },
      fields,
      errors: ["not_found"],
      response: { description: "the new account (without its credentials)", schema: Data(ConnectedAccount) },
      async handle({ caller, body, query }) {
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        const created = await written(
          deps,
          deps.connectedAccounts.create(
            { ownerId, creatorId: caller.userId, app: body.app, name: body.name ?? null, auth: body.auth },
            { metadata: { by: caller.userId } },
          ),
        );
        return { body: { data: toItem(deps.connectedAccountsView.account(created.id)!) } };
      },
    }),
    route({
      method: "GET",
      path: "/users/me/accounts",
      operationId: "listMyAccounts",
      summary: "The caller's connected accounts (extension)",
      tag: "accounts",
      paginated: true,
      fields,
      response: { description: "a page of accounts, oldest first", schema: Paged(ConnectedAccount) },
      handle: ({ caller, page }) => ({ body: pageBody(deps.connectedAccountsView.accountsOf(caller.userId, page), toItem) }),
    }),
    route({
      method: "GET",
      path: "/orgs/{org_id}/accounts",
      operationId: "listOrgAccounts",
      summary: "An organization's connected accounts (members only; extension)",
      tag: "accounts",
      params: { org_id: Type.String({ maxLength: 100 }) },
      paginated: true,
      fields,
      errors: ["not_found"],
      response: { description: "a page of accounts, oldest first", schema: Paged(ConnectedAccount) },
      handle: ({ caller, params, page }) => ({
        body: pageBody(deps.connectedAccountsView.accountsOf(deps.access.org(caller, params.org_id), page), toItem),
      }),
    }),
    route({
      method: "GET",
      path: "/accounts/{id}",
      operationId: "getAccount",
      summary: "One connected account, without its credentials (extension)",
      tag: "accounts",
      params: { id: ACCOUNT_ID },
      fields,
      errors: ["not_found"],
      response: { description: "the account", schema: Data(ConnectedAccount) },
      handle: ({ caller, params }) => ({ body: { data: toItem(visibleAccount(deps, caller, params.id)) } }),
    }),
    route({
      method: "DELETE",
      path: "/accounts/{id}",
      operationId: "deleteAccount",
      summary: "Delete a connected account; refused (409 account_in_use, naming them) while sources bind it (extension)",
      tag: "accounts",
      params: { id: ACCOUNT_ID },
      errors: ["not_found", "account_in_use"],
      response: { status: 204, description: "deleted" },
      async handle({ caller, params }) {
        const account = visibleAccount(deps, caller, params.id);
        await written(deps, deps.connectedAccounts.delete(account.id, { metadata: { by: caller.userId } }));
        return { status: 204 };
      },
    }),
  ];
}
