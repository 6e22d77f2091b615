import type { Projection } from "../src/projector/projection.js";
import type { WebhookEvent } from "../commands/webhooks/webhook.js";
import { bumpCount, countTable } from "./counts.js";
import { statement } from "../src/readModels/statements.js";

export interface WebhookRow {
  id: string;
  owner_id: string;
  creator_id: string;
  url: string;
  name: string | null;
  description: string | null;
  /** active, paused or disabled. */
  status: string;
  disabled_reason: string | null;
  /** JSON of the sealed secret, and of the previous one while it still signs. */
  secret: string;
  previous_secret: string | null;
  previous_valid_until: number | null;
  created_at: number;
  updated_at: number;
  seq: number;
}

export const webhooksProjection: Projection = {
  name: "webhooks",
  version: 1,
  tables: ["webhooks", "webhook_counts"],
  schema: [
    `CREATE TABLE IF NOT EXISTS webhooks (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, creator_id TEXT NOT NULL, url TEXT NOT NULL, name TEXT, description TEXT,
      status TEXT NOT NULL, disabled_reason TEXT, secret TEXT NOT NULL, previous_secret TEXT, previous_valid_until INTEGER,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS webhooks_by_owner ON webhooks (owner_id, seq)",
    countTable("webhook_counts"),
  ],
  handles: new Set([
    "WebhookCreated",
    "WebhookUpdated",
    "WebhookPaused",
    "WebhookResumed",
    "WebhookDisabled",
    "WebhookSecretRotated",
    "WebhookDeleted",
  ]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as WebhookEvent;
    const at = Math.floor(event.data.at / 1000);
    switch (event.type) {
      case "WebhookCreated": {
        const d = event.data;
        statement(
          db,
          `INSERT INTO webhooks (id, owner_id, creator_id, url, name, description, status, secret, created_at, updated_at, seq)
           VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)`,
        ).run(d.id, d.ownerId, d.creatorId, d.url, d.name, d.description, JSON.stringify(d.secret), at, at, recorded.position);
        bumpCount(db, "webhook_counts", d.ownerId, 1);
        break;
      }
      case "WebhookUpdated":
        statement(db, "UPDATE webhooks SET url = ?, name = ?, description = ?, updated_at = ? WHERE id = ?").run(
          event.data.url,
          event.data.name,
          event.data.description,
          at,
          event.data.id,
        );
        break;
      case "WebhookPaused":
        statement(db, "UPDATE webhooks SET status = 'paused', updated_at = ? WHERE id = ?").run(at, event.data.id);
        break;
      case "WebhookResumed":
        statement(db, "UPDATE webhooks SET status = 'active', disabled_reason = NULL, updated_at = ? WHERE id = ?").run(at, event.data.id);
        break;
      case "WebhookDisabled":
        statement(db, "UPDATE webhooks SET status = 'disabled', disabled_reason = ?, updated_at = ? WHERE id = ?").run(
          event.data.reason,
          at,
          event.data.id,
        );
        break;
      case "WebhookSecretRotated":
        statement(db, "UPDATE webhooks SET secret = ?, previous_secret = ?, previous_valid_until = ?, updated_at = ? WHERE id = ?").run(
          JSON.stringify(event.data.secret),
          JSON.stringify(event.data.previous),
          event.data.previousValidUntil,
          at,
          event.data.id,
        );
        break;
      case "WebhookDeleted": {
        const removed = statement(db, "DELETE FROM webhooks WHERE id = ?").run(event.data.id);
        if (removed.changes > 0) bumpCount(db, "webhook_counts", event.data.ownerId, -1);
        break;
      }
    }
  },
};
