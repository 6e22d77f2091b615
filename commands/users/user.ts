import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

export type Plan = "free" | "paid";

export type UserCreated = DomainEvent<
  "UserCreated",
  { id: string; username: string; email: string; plan: Plan; operator: boolean; at: number }
>;
export type UserPlanChanged = DomainEvent<"UserPlanChanged", { id: string; plan: Plan; at: number }>;
export type UserEvent = UserCreated | UserPlanChanged;

export type UserState =
  { status: "none" } | { status: "active"; id: string; username: string; email: string; plan: Plan; operator: boolean; planSince: number };

export type CreateUser = Command<"CreateUser", UserCreated["data"]>;
export type ChangePlan = Command<"ChangePlan", { id: string; plan: Plan; at: number }>;
export type UserCommand = CreateUser | ChangePlan;

/** Usernames: what a URL, a shell and a log line take without quoting. */
export const USERNAME = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;
/** An address with one @, a local part and a dotted domain (or localhost); deliverability is not ours to judge. */
export const EMAIL = /^[^\s@]{1,64}@(?:[^\s@.]+(?:\.[^\s@.]+)+|localhost)$/;

function checkAccount(data: UserCreated["data"]): void {
  if (!USERNAME.test(data.username)) {
    throw new DomainError(
      "invalid_name",
      `username "${data.username.slice(0, 100)}" must be 1 to 64 lower-case letters, digits, ".", "_" or "-", starting and ending with a letter or digit`,
    );
  }
  if (data.email.length > 254 || !EMAIL.test(data.email)) {
    throw new DomainError("invalid_request", `email "${data.email.slice(0, 100)}" is not an email address`, [
      { path: "email", message: "is not an email address" },
    ]);
  }
}

export const user: Decider<UserCommand, UserState, UserEvent> = {
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
  decide(command, state) {
    switch (command.type) {
      case "CreateUser":
        if (state.status !== "none") throw new DomainError("already_exists", `user ${command.data.id} already exists`);
        checkAccount(command.data);
        return [{ type: "UserCreated", data: { ...command.data } }];
      case "ChangePlan":
        if (state.status === "none") throw notFound(`user ${command.data.id}`);
        if (state.plan === command.data.plan) return [];
        return [{ type: "UserPlanChanged", data: { ...command.data } }];
    }
  },
};
