import { expect } from "chai";
import { DomainError } from "../decider.js";
import { given } from "../testing.js";
import { checkBinding, connectedAccount, type ConnectedAccountCreated, type ConnectedAccountState } from "./connectedAccount.js";

const created: ConnectedAccountCreated = {
  type: "ConnectedAccountCreated",
  data: {
    id: "apn_1",
    ownerId: "u_1",
    creatorId: "u_1",
    app: "github",
    name: "work",
    auth: { $sealed: "v1.x.y.z" },
    fields: ["oauth_access_token"],
    at: 10,
  },
};
const deleted = { type: "ConnectedAccountDeleted" as const, data: { id: "apn_1", ownerId: "u_1", at: 12 } };
const create = (extra: Partial<ConnectedAccountCreated["data"]> = {}) => ({
  type: "CreateConnectedAccount" as const,
  data: { ...created.data, ...extra },
});
const remove = (usedBy: string[] = [], at = 12) => ({ type: "DeleteConnectedAccount" as const, data: { id: "apn_1", at, usedBy } });

describe("commands/connectedAccounts", () => {
  it("creates an account once", () => {
    given(connectedAccount).when(create()).then([created]);
    given(connectedAccount, created).when(create()).thenRejected("already_exists");
  });
  it("needs an app slug, a sensible name and at least one valid credential field", () => {
    given(connectedAccount)
      .when(create({ app: "GitHub App" }))
      .thenRejected("invalid_request", /name slug/);
    given(connectedAccount)
      .when(create({ name: "  " }))
      .thenRejected("invalid_request", /name/);
    given(connectedAccount)
      .when(create({ fields: [] }))
      .thenRejected("invalid_request", /at least one credential/);
    given(connectedAccount)
      .when(create({ fields: ["ok", "not ok"] }))
      .thenRejected("invalid_request", /"not ok"/);
    given(connectedAccount)
      .when(create({ fields: Array.from({ length: 51 }, (_, i) => `f${i}`) }))
      .thenRejected("invalid_request", /at most 50/);
    given(connectedAccount)
      .when(create({ name: null, app: "http_webhook" }))
      .then([{ ...created, data: { ...created.data, name: null, app: "http_webhook" } }]);
  });
  it("deletes an account no source binds, once", () => {
    given(connectedAccount, created).when(remove()).then([deleted]);
    given(connectedAccount, created, deleted).when(remove([], 13)).thenRejected("not_found");
    given(connectedAccount).when(remove()).thenRejected("not_found");
  });
  it("refuses to delete an account sources bind, naming them", () => {
    given(connectedAccount, created)
      .when(remove(["dc_a", "dc_b"]))
      .thenRejected("account_in_use", /sources dc_a, dc_b/);
  });
  it("binds only the owner's accounts of the prop's app; another owner's is unknown", () => {
    const state = [created].reduce(connectedAccount.evolve, connectedAccount.initialState());
    const bind = (s: ConnectedAccountState, ownerId: string, app: string | undefined) => () =>
      checkBinding(s, { accountId: "apn_1", ownerId, app, prop: "github" });
    expect(bind(state, "u_1", "github")).to.not.throw();
    expect(bind(state, "u_1", undefined)).to.not.throw();
    const codeOf = (f: () => void) => {
      try {
        f();
      } catch (error) {
        return (error as DomainError).code;
      }
      return undefined;
    };
    expect(codeOf(bind(state, "u_2", "github"))).to.equal("not_found");
    expect(codeOf(bind(state, "u_1", "slack"))).to.equal("invalid_request");
    expect(codeOf(bind(connectedAccount.evolve(state, deleted), "u_1", "github"))).to.equal("not_found");
    expect(codeOf(bind(connectedAccount.initialState(), "u_1", "github"))).to.equal("not_found");
  });
});
