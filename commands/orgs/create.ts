import { CommandRejected, type Decide } from "../decider.js";
import type { OrgEvent, OrgState } from "./org.js";

export type CreateOrg = { id: string; name: string; orgname: string; email: string; ownerId: string; at: number };

export const createOrg: Decide<CreateOrg, OrgState, OrgEvent> = (command, state) => {
  if (state.status !== "none") throw new CommandRejected("org_exists", `organization ${command.id} already exists`, 409);
  return [
    { type: "OrgCreated", data: { ...command } },
    { type: "OrgMemberAdded", data: { id: command.id, userId: command.ownerId, role: "owner", at: command.at } },
  ];
};
