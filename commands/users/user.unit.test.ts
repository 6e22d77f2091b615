import { given } from "../testing.js";
import { user, type UserCreated } from "./user.js";

const created: UserCreated = {
  type: "UserCreated",
  data: { id: "u_1", username: "ada", email: "ada@example.com", plan: "free", operator: false, at: 100 },
};
const create = (data: Partial<UserCreated["data"]> = {}) => ({ type: "CreateUser" as const, data: { ...created.data, ...data } });

describe("commands/users", () => {
  it("creates a user once", () => {
    given(user).when(create()).then([created]);
  });
  it("refuses to create the same user twice", () => {
    given(user, created).when(create()).thenRejected("already_exists");
  });
  it("refuses usernames that are not plain lower-case names", () => {
    for (const username of ["Bad Name!", "", "UPPER", "-dash", "trailing.", "a".repeat(65), "spa ce", "emoji🙂"]) {
      given(user)
        .when(create({ username }))
        .thenRejected("invalid_name", /username/);
    }
    for (const username of ["a", "ada.lovelace", "ops_team-2", "x".repeat(64)])
      given(user)
        .when(create({ username }))
        .then([{ ...created, data: { ...created.data, username } }]);
  });
  it("refuses emails that are not addresses", () => {
    for (const email of ["not-an-email", "a@b", "@example.com", "a b@example.com", "a@@example.com", `${"a".repeat(250)}@example.com`]) {
      given(user).when(create({ email })).thenRejected("invalid_request", /email/);
    }
  });
  it("changes the plan", () => {
    given(user, created)
      .when({ type: "ChangePlan", data: { id: "u_1", plan: "paid", at: 200 } })
      .then([{ type: "UserPlanChanged", data: { id: "u_1", plan: "paid", at: 200 } }]);
  });
  it("changing to the current plan changes nothing", () => {
    given(user, created)
      .when({ type: "ChangePlan", data: { id: "u_1", plan: "free", at: 200 } })
      .then([]);
  });
  it("cannot change the plan of an unknown user", () => {
    given(user)
      .when({ type: "ChangePlan", data: { id: "u_1", plan: "paid", at: 200 } })
      .thenRejected("not_found");
  });
});
