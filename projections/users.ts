import type { Projection } from "../src/projector/projection.js";
import type { UserEvent } from "../commands/users/user.js";
import { statement } from "../src/readModels/statements.js";

export const usersProjection: Projection = {
  name: "users",
  version: 1,
  tables: ["users"],
  schema: [
    `CREATE TABLE IF NOT EXISTS users (
      id TEXT PRIMARY KEY, username TEXT NOT NULL, email TEXT NOT NULL, plan TEXT NOT NULL,
      operator INTEGER NOT NULL, plan_since INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`,
  ],
  handles: new Set(["UserCreated", "UserPlanChanged"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as UserEvent;
    switch (event.type) {
      case "UserCreated": {
        const d = event.data;
        statement(
          db,
          "INSERT INTO users (id, username, email, plan, operator, plan_since, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ).run(d.id, d.username, d.email, d.plan, d.operator ? 1 : 0, d.at, d.at, d.at);
        break;
      }
      case "UserPlanChanged":
        statement(db, "UPDATE users SET plan = ?, plan_since = ?, updated_at = ? WHERE id = ?").run(
          event.data.plan,
          event.data.at,
          event.data.at,
          event.data.id,
        );
        break;
    }
  },
};
