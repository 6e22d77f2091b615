import type { Projection } from "../src/projector/projection.js";
import type { DeliveryEvent } from "../commands/deliveries/delivery.js";
import type { WebhookDeleted } from "../commands/webhooks/webhook.js";
import { statement } from "../src/readModels/statements.js";
import { KeptWindow } from "./keptWindow.js";

/** Attempts kept and listable per listener. */
export const KEPT_ATTEMPTS = 1000;

export interface DeliveryAttemptRow {
  listener_id: string;
  delivery_id: string;
  attempt: number;
  ok: number;
  status: number | null;
  latency_ms: number;
  error: string | null;
  at: number;
  next_attempt_at: number | null;
  event_id: string;
  emitter_id: string;
  channel: string;
  subscription_id: string;
  seq: number;
}

/**
 * Webhook delivery attempts (the newest 1000 per listener), and each listener's queue as far as
 * the sweeper needs it: whether anything waits, and when its head is due.
 */
export const deliveriesProjection: Projection = {
  name: "deliveries",
  version: 2,
  tables: ["delivery_attempts", "delivery_queues"],
  schema: [
    `CREATE TABLE IF NOT EXISTS delivery_attempts (
      listener_id TEXT NOT NULL, delivery_id TEXT NOT NULL, attempt INTEGER NOT NULL, ok INTEGER NOT NULL, status INTEGER,
      latency_ms INTEGER NOT NULL, error TEXT, at INTEGER NOT NULL, next_attempt_at INTEGER, event_id TEXT NOT NULL,
      emitter_id TEXT NOT NULL, channel TEXT NOT NULL, subscription_id TEXT NOT NULL, seq INTEGER NOT NULL,
      PRIMARY KEY (listener_id, seq))`,
    "CREATE INDEX IF NOT EXISTS delivery_attempts_by_delivery ON delivery_attempts (listener_id, delivery_id)",
    `CREATE TABLE IF NOT EXISTS delivery_queues (
      listener_id TEXT PRIMARY KEY, pending INTEGER NOT NULL, next_attempt_at INTEGER)`,
    "CREATE INDEX IF NOT EXISTS delivery_queues_due ON delivery_queues (next_attempt_at) WHERE pending > 0",
  ],
  handles: new Set(["DeliveryAttempted", "DeliveriesQueued", "DeliveryDropped", "WebhookDeleted"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as DeliveryEvent | WebhookDeleted;
    if (event.type === "WebhookDeleted") {
      statement(db, "DELETE FROM delivery_attempts WHERE listener_id = ?").run(event.data.id);
      statement(db, "DELETE FROM delivery_queues WHERE listener_id = ?").run(event.data.id);
      return;
    }
    const d = event.data;
    if (event.type === "DeliveryAttempted") {
      const a = event.data;
      statement(
        db,
        `INSERT OR IGNORE INTO delivery_attempts (listener_id, delivery_id, attempt, ok, status, latency_ms, error, at, next_attempt_at,
          event_id, emitter_id, channel, subscription_id, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        a.listenerId,
        a.deliveryId,
        a.attempt,
        a.ok ? 1 : 0,
        a.status,
        Math.round(a.latencyMs),
        a.error,
        a.at,
        a.nextAttemptAt,
        a.eventId,
        a.emitterId,
        a.channel,
        a.subscriptionId,
        recorded.position,
      );
      keptAttempts.touch(a.listenerId);
    } else if (event.type === "DeliveryDropped") {
      // Given up (the webhook was disabled): its last attempt has no next try any more.
      statement(
        db,
        `UPDATE delivery_attempts SET next_attempt_at = NULL WHERE listener_id = ? AND seq =
          (SELECT MAX(seq) FROM delivery_attempts WHERE listener_id = ? AND delivery_id = ?)`,
      ).run(event.data.listenerId, event.data.listenerId, event.data.deliveryId);
    }
    // Every delivery event carries the queue's length after it, and when its head is due.
    statement(
      db,
      `INSERT INTO delivery_queues (listener_id, pending, next_attempt_at) VALUES (?, ?, ?)
       ON CONFLICT(listener_id) DO UPDATE SET pending = excluded.pending, next_attempt_at = excluded.next_attempt_at`,
    ).run(d.listenerId, d.pending, d.headDueAt);
  },
  afterBatch(db) {
    keptAttempts.trim(db);
  },
};

const keptAttempts = new KeptWindow("delivery_attempts", "listener_id", KEPT_ATTEMPTS);
