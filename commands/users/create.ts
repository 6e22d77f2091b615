import { CommandRejected, type Decide } from "../decider.js";
import type { Plan, UserEvent, UserState } from "./user.js";

export type CreateUser = { id: string; username: string; email: string; plan: Plan; operator: boolean; at: number };

export const createUser: Decide<CreateUser, UserState, UserEvent> = (command, state) => {
  if (state.status !== "none") throw new CommandRejected("user_exists", `user ${command.id} already exists`, 409);
  return [{ type: "UserCreated", data: { ...command } }];
};
