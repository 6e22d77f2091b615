import type { Projection } from "../src/projector/projection.js";
import type { AutoSubscriptionEvent, SubscriptionEvent } from "../commands/subscriptions/subscription.js";
import { subscriptionId } from "../commands/subscriptions/subscription.js";
import type { SourceDeleted, SourceDeployed } from "../commands/sources/source.js";
import type { WorkflowDeleted, WorkflowDeployed } from "../commands/workflows/workflow.js";
import type { WebhookDeleted } from "../commands/webhooks/webhook.js";
import { bumpCount, countTable } from "./counts.js";
import { statement } from "../src/readModels/statements.js";

export interface SubscriptionRow {
  id: string;
  owner_id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
  auto_subscription_id: string | null;
  created_at: number;
  seq: number;
}

export interface AutoSubscriptionRow {
  id: string;
  owner_id: string;
  event_name: string;
  listener_id: string;
  created_at: number;
  seq: number;
}

type Handled =
  SubscriptionEvent | AutoSubscriptionEvent | SourceDeployed | SourceDeleted | WorkflowDeployed | WorkflowDeleted | WebhookDeleted;

/**
 * Subscriptions, explicit ones and those an auto-subscription makes for each source created after
 * it (derived here, in log order: the auto-subscriptions present when SourceDeployed is applied
 * are exactly those created before it). A deleted emitter or listener takes its subscriptions along.
 */
export const subscriptionsProjection: Projection = {
  name: "subscriptions",
  version: 1,
  tables: ["subscriptions", "auto_subscriptions", "subscription_counts"],
  schema: [
    `CREATE TABLE IF NOT EXISTS subscriptions (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, emitter_id TEXT NOT NULL, listener_id TEXT NOT NULL, event_name TEXT NOT NULL,
      auto_subscription_id TEXT, created_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS subscriptions_by_emitter ON subscriptions (emitter_id, event_name)",
    "CREATE INDEX IF NOT EXISTS subscriptions_by_owner ON subscriptions (owner_id, seq)",
    "CREATE INDEX IF NOT EXISTS subscriptions_by_listener ON subscriptions (listener_id)",
    `CREATE TABLE IF NOT EXISTS auto_subscriptions (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, event_name TEXT NOT NULL, listener_id TEXT NOT NULL,
      created_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS auto_subscriptions_by_owner ON auto_subscriptions (owner_id, seq)",
    countTable("subscription_counts"),
  ],
  handles: new Set([
    "SubscriptionCreated",
    "SubscriptionDeleted",
    "AutoSubscriptionCreated",
    "AutoSubscriptionDeleted",
    "SourceDeployed",
    "SourceDeleted",
    "WorkflowDeployed",
    "WorkflowDeleted",
    "WebhookDeleted",
  ]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as Handled;
    const insert = (row: Omit<SubscriptionRow, "seq">) => {
      const inserted = statement(
        db,
        `INSERT OR IGNORE INTO subscriptions (id, owner_id, emitter_id, listener_id, event_name, auto_subscription_id, created_at, seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        row.id,
        row.owner_id,
        row.emitter_id,
        row.listener_id,
        row.event_name,
        row.auto_subscription_id,
        row.created_at,
        recorded.position,
      );
      if (inserted.changes > 0) bumpCount(db, "subscription_counts", row.owner_id, 1);
    };
    const removeWhere = (where: string, ...params: string[]) => {
      const owners = statement<string[], { owner_id: string }>(db, `SELECT owner_id FROM subscriptions WHERE ${where}`).all(...params);
      statement(db, `DELETE FROM subscriptions WHERE ${where}`).run(...params);
      for (const { owner_id } of owners) bumpCount(db, "subscription_counts", owner_id, -1);
    };
    switch (event.type) {
      case "SubscriptionCreated": {
        const d = event.data;
        insert({
          id: d.id,
          owner_id: d.ownerId,
          emitter_id: d.emitterId,
          listener_id: d.listenerId,
          event_name: d.eventName,
          auto_subscription_id: d.autoSubscriptionId ?? null,
          created_at: d.at,
        });
        break;
      }
      case "SubscriptionDeleted":
        removeWhere("id = ?", event.data.id);
        break;
      case "AutoSubscriptionCreated": {
        const d = event.data;
        statement(
          db,
          "INSERT OR IGNORE INTO auto_subscriptions (id, owner_id, event_name, listener_id, created_at, seq) VALUES (?, ?, ?, ?, ?, ?)",
        ).run(d.id, d.ownerId, d.eventName, d.listenerId, d.at, recorded.position);
        break;
      }
      case "AutoSubscriptionDeleted":
        statement(db, "DELETE FROM auto_subscriptions WHERE id = ?").run(event.data.id);
        break;
      case "WorkflowDeployed":
      case "SourceDeployed": {
        const d = event.data;
        // Auto-subscriptions apply to emitters created after them: a workflow's first version only.
        if (event.type === "WorkflowDeployed" && event.data.version !== 1) break;
        const autos = statement<[string], AutoSubscriptionRow>(db, "SELECT * FROM auto_subscriptions WHERE owner_id = ? ORDER BY seq").all(
          d.ownerId,
        );
        for (const auto of autos) {
          insert({
            id: subscriptionId(d.ownerId, d.id, auto.listener_id, auto.event_name),
            owner_id: d.ownerId,
            emitter_id: d.id,
            listener_id: auto.listener_id,
            event_name: auto.event_name,
            auto_subscription_id: auto.id,
            // Sources record seconds, workflows milliseconds.
            created_at: event.type === "WorkflowDeployed" ? Math.floor(d.at / 1000) : d.at,
          });
        }
        break;
      }
      case "WorkflowDeleted":
      case "SourceDeleted":
        removeWhere("emitter_id = ? OR listener_id = ?", event.data.id, event.data.id);
        statement(db, "DELETE FROM auto_subscriptions WHERE listener_id = ?").run(event.data.id);
        break;
      case "WebhookDeleted":
        removeWhere("listener_id = ?", event.data.id);
        statement(db, "DELETE FROM auto_subscriptions WHERE listener_id = ?").run(event.data.id);
        break;
    }
  },
};
