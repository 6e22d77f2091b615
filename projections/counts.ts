import type { Database } from "better-sqlite3";
import { statement } from "../src/readModels/statements.js";

// Listings report total_count without counting rows: each projection keeps its own counter table.
export const countTable = (table: string) => `CREATE TABLE IF NOT EXISTS ${table} (owner TEXT PRIMARY KEY, n INTEGER NOT NULL)`;

export function bumpCount(db: Database, table: string, owner: string, delta: number): void {
  statement(db, `INSERT INTO ${table} (owner, n) VALUES (?, ?) ON CONFLICT(owner) DO UPDATE SET n = n + excluded.n`).run(owner, delta);
}
