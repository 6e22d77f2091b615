import type { Projection } from "../src/projector/projection.js";
import type { RunLogged } from "../commands/runLogs/runLog.js";
import { statement } from "../src/readModels/statements.js";

// Daily rows (UTC days) answer both the free daily quota and paid billing periods, which start at a UTC midnight.
export const usageProjection: Projection = {
  name: "usage",
  version: 1,
  tables: ["usage_daily"],
  schema: [
    `CREATE TABLE IF NOT EXISTS usage_daily (
      user_id TEXT NOT NULL, day INTEGER NOT NULL, invocations INTEGER NOT NULL, compute_ms INTEGER NOT NULL,
      PRIMARY KEY (user_id, day))`,
  ],
  handles: new Set(["RunLogged"]),
  apply(db, recorded) {
    // Every execution of user code counts, hooks included: each one costs compute.
    const d = recorded.data as RunLogged["data"];
    if (d.skipped) return;
    const day = Math.floor(d.startedMs / 86_400_000);
    statement(
      db,
      `INSERT INTO usage_daily (user_id, day, invocations, compute_ms) VALUES (?, ?, 1, ?)
       ON CONFLICT(user_id, day) DO UPDATE SET invocations = invocations + 1, compute_ms = compute_ms + excluded.compute_ms`,
    ).run(d.userId, day, Math.max(0, Math.round(d.computeMs)));
  },
};
