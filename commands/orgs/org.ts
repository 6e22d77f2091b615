import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

export type OrgRole = "owner" | "member";

export type OrgCreated = DomainEvent<
  "OrgCreated",
  { id: string; name: string; orgname: string; email: string; ownerId: string; at: number }
>;
export type OrgMemberAdded = DomainEvent<"OrgMemberAdded", { id: string; userId: string; role: OrgRole; at: number }>;
export type OrgEvent = OrgCreated | OrgMemberAdded;

export type OrgState =
  { status: "none" } | { status: "active"; id: string; name: string; orgname: string; members: Record<string, OrgRole> };

/** The users named exist (the application read their streams). */
export type CreateOrg = Command<"CreateOrg", OrgCreated["data"] & { ownerExists: boolean }>;
export type AddMember = Command<"AddMember", OrgMemberAdded["data"] & { userExists: boolean }>;
export type OrgCommand = CreateOrg | AddMember;

export const org: Decider<OrgCommand, OrgState, OrgEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "OrgCreated": {
        const { id, name, orgname, ownerId } = event.data;
        return { status: "active", id, name, orgname, members: { [ownerId]: "owner" } };
      }
      case "OrgMemberAdded":
        return state.status === "active" ? { ...state, members: { ...state.members, [event.data.userId]: event.data.role } } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "CreateOrg": {
        const { ownerExists, ...data } = command.data;
        if (!ownerExists) throw notFound(`user ${data.ownerId}`);
        if (state.status !== "none") throw new DomainError("already_exists", `organization ${data.id} already exists`);
        if (data.orgname === "") throw new DomainError("invalid_name", "the organization name needs letters or digits");
        // The creator is the owner and a member.
        return [
          { type: "OrgCreated", data },
          { type: "OrgMemberAdded", data: { id: data.id, userId: data.ownerId, role: "owner", at: data.at } },
        ];
      }
      case "AddMember": {
        const { userExists, ...data } = command.data;
        if (state.status === "none") throw notFound(`organization ${data.id}`);
        if (!userExists) throw notFound(`user ${data.userId}`);
        // Adding someone who is already a member changes nothing (the owner stays owner).
        if (state.members[data.userId] !== undefined) return [];
        return [{ type: "OrgMemberAdded", data }];
      }
    }
  },
};
