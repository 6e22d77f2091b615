import type { Database } from "better-sqlite3";
import type { DeliveryAttemptRow } from "../../projections/deliveries.js";
import { keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";

export interface DeliveryAttempt {
  readonly listenerId: string;
  readonly deliveryId: string;
  readonly attempt: number;
  readonly ok: boolean;
  readonly status: number | null;
  readonly latencyMs: number;
  readonly error: string | null;
  readonly at: number;
  readonly nextAttemptAt: number | null;
  readonly eventId: string;
  readonly emitterId: string;
  readonly channel: string;
  readonly subscriptionId: string;
  readonly seq: number;
}

const toAttempt = (r: DeliveryAttemptRow): DeliveryAttempt => ({
  listenerId: r.listener_id,
  deliveryId: r.delivery_id,
  attempt: r.attempt,
  ok: r.ok === 1,
  status: r.status,
  latencyMs: r.latency_ms,
  error: r.error,
  at: r.at,
  nextAttemptAt: r.next_attempt_at,
  eventId: r.event_id,
  emitterId: r.emitter_id,
  channel: r.channel,
  subscriptionId: r.subscription_id,
  seq: r.seq,
});

/** Queries over the deliveries read model (projections/deliveries.ts). */
export class DeliveriesReadModel {
  constructor(private readonly db: Database) {}

  /** A listener's attempts, newest first (the newest 1000 are kept). */
  attempts(listenerId: string, page: PageRequest): Page<DeliveryAttempt> {
    // At most 1000 rows per listener are kept, so counting them stays cheap.
    const total = statement<[string], { n: number }>(this.db, "SELECT COUNT(*) AS n FROM delivery_attempts WHERE listener_id = ?").get(
      listenerId,
    )!.n;
    return mapPage(
      keysetPage<DeliveryAttemptRow>(
        this.db,
        { from: "delivery_attempts", where: "listener_id = ?", params: [listenerId], order: "desc", total },
        page,
      ),
      toAttempt,
    );
  }

  /** The newest attempt of one delivery to a listener, if any is kept. */
  lastAttempt(listenerId: string, deliveryId: string): DeliveryAttempt | undefined {
    const row = statement<[string, string], DeliveryAttemptRow>(
      this.db,
      "SELECT * FROM delivery_attempts WHERE listener_id = ? AND delivery_id = ? ORDER BY seq DESC LIMIT 1",
    ).get(listenerId, deliveryId);
    return row && toAttempt(row);
  }

  /** Listeners whose queue's head is due (the sweeper nudges them). */
  dueQueues(now: number, limit = 1000): string[] {
    return statement<[number, number], { listener_id: string }>(
      this.db,
      "SELECT listener_id FROM delivery_queues WHERE pending > 0 AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
    )
      .all(now, limit)
      .map((r) => r.listener_id);
  }

  /** What waits for a listener (0 when nothing). */
  pending(listenerId: string): number {
    return (
      statement<[string], { pending: number }>(this.db, "SELECT pending FROM delivery_queues WHERE listener_id = ?").get(listenerId)
        ?.pending ?? 0
    );
  }
}
