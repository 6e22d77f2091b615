import { DomainError, invalid, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

// A connected account: an app's credentials, kept once and bound into sources by id
// (`configured_props: { <app>: { authProvisionId: "apn_…" } }`, as Pipedream's Connect API does).
// The credentials arrive sealed; only the names of their fields are recorded in clear.

export type ConnectedAccountCreated = DomainEvent<
  "ConnectedAccountCreated",
  {
    id: string;
    /** A user or an org: who may bind and see it. */
    ownerId: string;
    creatorId: string;
    /** The app's name slug, as app props name it (`app: "github"`). */
    app: string;
    name: string | null;
    /** The credentials, sealed ({"$sealed": "…"}). */
    auth: { $sealed: string };
    /** The names of the credential fields (never their values). */
    fields: string[];
    at: number;
  }
>;
export type ConnectedAccountDeleted = DomainEvent<"ConnectedAccountDeleted", { id: string; ownerId: string; at: number }>;
export type ConnectedAccountEvent = ConnectedAccountCreated | ConnectedAccountDeleted;

export type ConnectedAccountState =
  { status: "none" | "deleted" } | { status: "active"; id: string; ownerId: string; app: string; name: string | null };

export type CreateConnectedAccount = Command<"CreateConnectedAccount", ConnectedAccountCreated["data"]>;
/** `usedBy`: the sources that bind the account now (the application reads them). */
export type DeleteConnectedAccount = Command<"DeleteConnectedAccount", { id: string; at: number; usedBy: readonly string[] }>;
export type ConnectedAccountCommand = CreateConnectedAccount | DeleteConnectedAccount;

export const APP_SLUG = /^[a-z0-9][a-z0-9_-]{0,99}$/;
const FIELD = /^[A-Za-z_$][A-Za-z0-9_$.-]{0,99}$/;
export const MAX_AUTH_FIELDS = 50;
export const MAX_ACCOUNT_NAME = 200;

export const connectedAccount: Decider<ConnectedAccountCommand, ConnectedAccountState, ConnectedAccountEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "ConnectedAccountCreated": {
        const { id, ownerId, app, name } = event.data;
        return { status: "active", id, ownerId, app, name };
      }
      case "ConnectedAccountDeleted":
        return { status: "deleted" };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "CreateConnectedAccount": {
        const data = command.data;
        if (state.status !== "none") throw new DomainError("already_exists", `account ${data.id} already exists`);
        if (!APP_SLUG.test(data.app)) {
          throw invalid("app must be an app's name slug (lower-case letters, digits, _ and -)", [
            { path: "body.app", message: "must be an app name slug such as github or google_sheets" },
          ]);
        }
        if (data.name !== null && (data.name.trim() === "" || data.name.length > MAX_ACCOUNT_NAME)) {
          throw invalid(`name must be 1 to ${MAX_ACCOUNT_NAME} characters`, [{ path: "body.name", message: "must not be empty" }]);
        }
        if (data.fields.length === 0) {
          throw invalid("auth needs at least one credential field; an app without credentials needs no account", [
            { path: "body.auth", message: "must hold at least one field" },
          ]);
        }
        if (data.fields.length > MAX_AUTH_FIELDS) {
          throw invalid(`auth may hold at most ${MAX_AUTH_FIELDS} fields`, [{ path: "body.auth", message: "has too many fields" }]);
        }
        const bad = data.fields.find((f) => !FIELD.test(f));
        if (bad !== undefined) {
          throw invalid(`auth field "${bad.slice(0, 100)}" is not a valid name`, [
            { path: `body.auth`, message: "field names are identifiers (letters, digits, _ $ . -)" },
          ]);
        }
        return [{ type: "ConnectedAccountCreated", data }];
      }
      case "DeleteConnectedAccount": {
        const { id, at, usedBy } = command.data;
        if (state.status !== "active") throw notFound(`account ${id}`);
        if (usedBy.length > 0) {
          throw new DomainError(
            "account_in_use",
            `account ${id} is bound by ${usedBy.length === 1 ? "source" : "sources"} ${usedBy.join(", ")}: update or delete ${usedBy.length === 1 ? "it" : "them"} first`,
            usedBy.map((sourceId) => ({ path: `sources.${sourceId}`, message: "binds this account" })),
          );
        }
        return [{ type: "ConnectedAccountDeleted", data: { id, ownerId: state.ownerId, at } }];
      }
    }
  },
};

/**
 * Whether a source may bind an account for one of its app props: the account must exist and
 * belong to the source's owner (anyone else's is the 404 of an unknown id: its existence never
 * leaks), and be an account of that prop's app.
 */
export function checkBinding(
  state: ConnectedAccountState,
  binding: { accountId: string; ownerId: string; app: string | undefined; prop: string },
): void {
  if (state.status !== "active" || state.ownerId !== binding.ownerId) throw notFound(`account ${binding.accountId}`);
  if (binding.app !== undefined && state.app !== binding.app) {
    throw invalid(`configured_props.${binding.prop}: account ${binding.accountId} is an account of ${state.app}, not of ${binding.app}`, [
      {
        path: `configured_props.${binding.prop}.authProvisionId`,
        message: `names an account of ${state.app}, this prop needs ${binding.app}`,
      },
    ]);
  }
}

/** An app prop's value that binds an account: `{ authProvisionId: "apn_…" }`. */
export const isAccountBinding = (value: unknown): value is { authProvisionId: string } =>
  typeof value === "object" &&
  value !== null &&
  !Array.isArray(value) &&
  typeof (value as { authProvisionId?: unknown }).authProvisionId === "string";

/** The accounts a source's stored props bind (app props and app[] items). */
export function accountIdsIn(configuredProps: Readonly<Record<string, unknown>>): string[] {
  const ids = new Set<string>();
  for (const value of Object.values(configuredProps)) {
    for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) if (isAccountBinding(item)) ids.add(item.authProvisionId);
  }
  return [...ids].sort();
}
