import type { DomainEvent, Evolver } from "../decider.js";

export type OrgRole = "owner" | "member";

export type OrgCreated = DomainEvent<
  "OrgCreated",
  { id: string; name: string; orgname: string; email: string; ownerId: string; at: number }
>;
export type OrgMemberAdded = DomainEvent<"OrgMemberAdded", { id: string; userId: string; role: OrgRole; at: number }>;
export type OrgEvent = OrgCreated | OrgMemberAdded;

export type OrgState =
  | { status: "none" }
  | { status: "active"; id: string; name: string; orgname: string; members: Record<string, OrgRole> };

export const orgStream = (orgId: string) => `org-${orgId}`;

export const org: Evolver<OrgState, OrgEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "OrgCreated": {
        const { id, name, orgname, ownerId } = event.data;
        return { status: "active", id, name, orgname, members: { [ownerId]: "owner" } };
      }
      case "OrgMemberAdded":
        return state.status === "active"
          ? { ...state, members: { ...state.members, [event.data.userId]: event.data.role } }
          : state;
    }
  },
};
