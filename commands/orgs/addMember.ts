import { CommandRejected, type Decide } from "../decider.js";
import type { OrgEvent, OrgRole, OrgState } from "./org.js";

export type AddMember = { id: string; userId: string; role: OrgRole; at: number };

/** Adding someone who is already a member changes nothing (the owner stays owner). */
export const addMember: Decide<AddMember, OrgState, OrgEvent> = (command, state) => {
  if (state.status === "none") throw new CommandRejected("not_found", `organization ${command.id} not found`, 404);
  if (state.members[command.userId] !== undefined) return [];
  return [{ type: "OrgMemberAdded", data: { ...command } }];
};
