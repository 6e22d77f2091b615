import type { Database } from "better-sqlite3";
import type { WebhookRow } from "../../projections/webhooks.js";
import type { SealedSecret } from "../../commands/webhooks/webhook.js";
import { countOf, keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";
import { ReadModelMemo, type AppliedEvents } from "./memo.js";
import { webhooksProjection } from "../../projections/webhooks.js";

export interface Webhook {
  readonly id: string;
  readonly ownerId: string;
  readonly creatorId: string;
  readonly url: string;
  readonly name: string | null;
  readonly description: string | null;
  readonly status: "active" | "paused" | "disabled";
  readonly disabledReason: string | null;
  /** Sealed: opened only to sign deliveries and to show it to its owner. */
  readonly secret: SealedSecret;
  /** The secret before the last rotation, while it still signs. */
  readonly previousSecret: { readonly secret: SealedSecret; readonly validUntil: number } | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly seq: number;
}

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  ownerId: r.owner_id,
  creatorId: r.creator_id,
  url: r.url,
  name: r.name,
  description: r.description,
  status: r.status as Webhook["status"],
  disabledReason: r.disabled_reason,
  secret: JSON.parse(r.secret) as SealedSecret,
  previousSecret:
    r.previous_secret && r.previous_valid_until !== null
      ? { secret: JSON.parse(r.previous_secret) as SealedSecret, validUntil: r.previous_valid_until }
      : null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  seq: r.seq,
});

/** Queries over the webhooks read model (projections/webhooks.ts). */
export class WebhooksReadModel {
  readonly #byId: ReadModelMemo<Webhook>;

  /** With `changes` (the node's projector), `webhook(id)` (every delivery) is memoized until a webhook changes. */
  constructor(
    private readonly db: Database,
    changes?: AppliedEvents,
  ) {
    this.#byId = new ReadModelMemo(changes, webhooksProjection.handles);
  }

  /** Frozen when memoized. */
  webhook(id: string): Webhook | undefined {
    return this.#byId.get(id, () => {
      const row = statement<[string], WebhookRow>(this.db, "SELECT * FROM webhooks WHERE id = ?").get(id);
      return row && toWebhook(row);
    });
  }

  webhooksOf(ownerId: string, page: PageRequest): Page<Webhook> {
    const rows = keysetPage<WebhookRow>(
      this.db,
      {
        from: "webhooks",
        where: "owner_id = ?",
        params: [ownerId],
        order: "asc",
        total: countOf(this.db, "webhook_counts", ownerId),
      },
      page,
    );
    return mapPage(rows, toWebhook);
  }
}
