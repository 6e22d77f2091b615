import type { Database } from "better-sqlite3";
import { statement } from "./statements.js";

const DAY_MS = 86_400_000;

export interface BillingPeriod {
  readonly start: number;
  readonly end: number;
}

/** Monthly periods anchored on the UTC day the paid plan began. */
export function billingPeriod(planSinceSeconds: number, nowMs: number): BillingPeriod {
  const anchor = new Date(Math.floor((planSinceSeconds * 1000) / DAY_MS) * DAY_MS);
  let months = 0;
  const at = (m: number) => Date.UTC(anchor.getUTCFullYear(), anchor.getUTCMonth() + m, anchor.getUTCDate());
  while (at(months + 1) <= nowMs) months++;
  return { start: at(months), end: at(months + 1) };
}

export class UsageReadModel {
  constructor(private readonly db: Database) {}

  /** Invocations and compute milliseconds of the UTC day containing `nowMs`. */
  today(userId: string, nowMs: number): { invocations: number; computeMs: number } {
    const row = statement<[string, number], { invocations: number; compute_ms: number }>(
      this.db,
      "SELECT invocations, compute_ms FROM usage_daily WHERE user_id = ? AND day = ?",
    ).get(userId, Math.floor(nowMs / DAY_MS));
    return { invocations: row?.invocations ?? 0, computeMs: row?.compute_ms ?? 0 };
  }

  invocationsBetween(userId: string, startMs: number, endMs: number): number {
    const row = statement<[string, number, number], { n: number | null }>(
      this.db,
      "SELECT SUM(invocations) AS n FROM usage_daily WHERE user_id = ? AND day >= ? AND day < ?",
    ).get(userId, Math.floor(startMs / DAY_MS), Math.floor(endMs / DAY_MS));
    return row?.n ?? 0;
  }
}
