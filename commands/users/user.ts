import type { DomainEvent, Evolver } from "../decider.js";

export type Plan = "free" | "paid";

export type UserCreated = DomainEvent<
  "UserCreated",
  { id: string; username: string; email: string; plan: Plan; operator: boolean; at: number }
>;
export type UserPlanChanged = DomainEvent<"UserPlanChanged", { id: string; plan: Plan; at: number }>;
export type UserEvent = UserCreated | UserPlanChanged;

export type UserState =
  | { status: "none" }
  | { status: "active"; id: string; username: string; email: string; plan: Plan; operator: boolean; planSince: number };

export const userStream = (userId: string) => `user-${userId}`;

export const user: Evolver<UserState, UserEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "UserCreated": {
        const { id, username, email, plan, operator, at } = event.data;
        return { status: "active", id, username, email, plan, operator, planSince: at };
      }
      case "UserPlanChanged":
        return state.status === "active" ? { ...state, plan: event.data.plan, planSince: event.data.at } : state;
    }
  },
};
