import { given } from "../testing.js";
import { org, type OrgCreated, type OrgMemberAdded } from "./org.js";
import { createOrg } from "./create.js";
import { addMember } from "./addMember.js";

const created: OrgCreated = {
  type: "OrgCreated",
  data: { id: "o_1", name: "Acme Inc", orgname: "acme-inc", email: "ops@acme.test", ownerId: "u_1", at: 10 },
};
const ownerAdded: OrgMemberAdded = { type: "OrgMemberAdded", data: { id: "o_1", userId: "u_1", role: "owner", at: 10 } };

describe("commands/orgs", () => {
  it("creating an org makes its owner a member", () => {
    given(org).when(createOrg, created.data).then([created, ownerAdded]);
  });
  it("refuses a second create", () => {
    given(org, created, ownerAdded).when(createOrg, created.data).thenRejected("org_exists", 409);
  });
  it("adds a member", () => {
    const added: OrgMemberAdded = { type: "OrgMemberAdded", data: { id: "o_1", userId: "u_2", role: "member", at: 11 } };
    given(org, created, ownerAdded).when(addMember, added.data).then([added]);
  });
  it("adding an existing member changes nothing", () => {
    given(org, created, ownerAdded).when(addMember, { id: "o_1", userId: "u_1", role: "member" as const, at: 12 }).then([]);
  });
  it("cannot add to an unknown org", () => {
    given(org).when(addMember, { id: "o_1", userId: "u_2", role: "member" as const, at: 12 }).thenRejected("not_found", 404);
  });
});
