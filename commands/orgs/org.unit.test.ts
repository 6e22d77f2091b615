import { given } from "../testing.js";
import { org, type OrgCreated, type OrgMemberAdded } from "./org.js";

const created: OrgCreated = {
  type: "OrgCreated",
  data: { id: "o_1", name: "Acme Inc", orgname: "acme-inc", email: "ops@acme.test", ownerId: "u_1", at: 10 },
};
const ownerAdded: OrgMemberAdded = { type: "OrgMemberAdded", data: { id: "o_1", userId: "u_1", role: "owner", at: 10 } };
const create = (data: Partial<OrgCreated["data"] & { ownerExists: boolean }> = {}) => ({
  type: "CreateOrg" as const,
  data: { ...created.data, ownerExists: true, ...data },
});
const add = (userId: string, userExists = true) => ({
  type: "AddMember" as const,
  data: { id: "o_1", userId, role: "member" as const, at: 11, userExists },
});

describe("commands/orgs", () => {
  it("creating an org makes its owner a member", () => {
    given(org).when(create()).then([created, ownerAdded]);
  });
  it("refuses a second create", () => {
    given(org, created, ownerAdded).when(create()).thenRejected("already_exists");
  });
  it("refuses an owner that does not exist, and a name without letters or digits", () => {
    given(org)
      .when(create({ ownerExists: false }))
      .thenRejected("not_found", /user u_1/);
    given(org)
      .when(create({ orgname: "" }))
      .thenRejected("invalid_name");
  });
  it("adds a member", () => {
    given(org, created, ownerAdded)
      .when(add("u_2"))
      .then([{ type: "OrgMemberAdded", data: { id: "o_1", userId: "u_2", role: "member", at: 11 } }]);
  });
  it("adding an existing member changes nothing", () => {
    given(org, created, ownerAdded).when(add("u_1")).then([]);
  });
  it("cannot add to an unknown org, nor add a user that does not exist", () => {
    given(org)
      .when(add("u_2"))
      .thenRejected("not_found", /organization/);
    given(org, created, ownerAdded)
      .when(add("u_3", false))
      .thenRejected("not_found", /user u_3/);
  });
});
