import { CommandRejected, type Decide } from "../decider.js";
import type { Plan, UserEvent, UserState } from "./user.js";

export type ChangePlan = { id: string; plan: Plan; at: number };

export const changePlan: Decide<ChangePlan, UserState, UserEvent> = (command, state) => {
  if (state.status === "none") throw new CommandRejected("not_found", `user ${command.id} not found`, 404);
  if (state.plan === command.plan) return [];
  return [{ type: "UserPlanChanged", data: { ...command } }];
};
