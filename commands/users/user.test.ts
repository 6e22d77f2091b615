import { given } from "../testing.js";
import { user, type UserCreated } from "./user.js";
import { createUser } from "./create.js";
import { changePlan } from "./changePlan.js";

const created: UserCreated = {
  type: "UserCreated",
  data: { id: "u_1", username: "ada", email: "ada@example.com", plan: "free", operator: false, at: 100 },
};

describe("commands/users", () => {
  it("creates a user once", () => {
    given(user).when(createUser, created.data).then([created]);
  });
  it("refuses to create the same user twice", () => {
    given(user, created).when(createUser, created.data).thenRejected("user_exists", 409);
  });
  it("changes the plan", () => {
    given(user, created)
      .when(changePlan, { id: "u_1", plan: "paid" as const, at: 200 })
      .then([{ type: "UserPlanChanged", data: { id: "u_1", plan: "paid", at: 200 } }]);
  });
  it("changing to the current plan changes nothing", () => {
    given(user, created).when(changePlan, { id: "u_1", plan: "free" as const, at: 200 }).then([]);
  });
  it("cannot change the plan of an unknown user", () => {
    given(user).when(changePlan, { id: "u_1", plan: "paid" as const, at: 200 }).thenRejected("not_found", 404);
  });
});
