import type { Database } from "better-sqlite3";
import type { AutoSubscriptionRow, SubscriptionRow } from "../../projections/subscriptions.js";
import { countOf, keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";
import { PER_SOURCE_MEMO_ENTRIES, ReadModelMemo, type AppliedEvents } from "./memo.js";
import { subscriptionsProjection } from "../../projections/subscriptions.js";

export interface Subscription {
  readonly id: string;
  readonly ownerId: string;
  /** A source or workflow id, or a glob: dc_* (the owner's sources), p_* (the owner's workflows). */
  readonly emitterId: string;
  readonly listenerId: string;
  /** "" for the default channel. */
  readonly eventName: string;
  readonly autoSubscriptionId: string | null;
  readonly createdAt: number;
  readonly seq: number;
}

export interface AutoSubscription {
  readonly id: string;
  readonly ownerId: string;
  readonly eventName: string;
  readonly listenerId: string;
  readonly createdAt: number;
  readonly seq: number;
}

const toSubscription = (r: SubscriptionRow): Subscription => ({
  id: r.id,
  ownerId: r.owner_id,
  emitterId: r.emitter_id,
  listenerId: r.listener_id,
  eventName: r.event_name,
  autoSubscriptionId: r.auto_subscription_id,
  createdAt: r.created_at,
  seq: r.seq,
});
const toAuto = (r: AutoSubscriptionRow): AutoSubscription => ({
  id: r.id,
  ownerId: r.owner_id,
  eventName: r.event_name,
  listenerId: r.listener_id,
  createdAt: r.created_at,
  seq: r.seq,
});

/** Queries over the subscriptions read model (projections/subscriptions.ts). */
export class SubscriptionsReadModel {
  readonly #matching: ReadModelMemo<Subscription[]>;

  /**
   * With `changes` (the node's projector), `matching` (every routed event) is memoized until a
   * subscription changes, one entry per emitter that emits: as many as a node's busy sources (an
   * entry of an emitter nobody subscribes to is ~150 bytes).
   */
  constructor(
    private readonly db: Database,
    changes?: AppliedEvents,
  ) {
    this.#matching = new ReadModelMemo(changes, subscriptionsProjection.handles, PER_SOURCE_MEMO_ENTRIES);
  }

  subscription(id: string): Subscription | undefined {
    const row = statement<[string], SubscriptionRow>(this.db, "SELECT * FROM subscriptions WHERE id = ?").get(id);
    return row && toSubscription(row);
  }

  subscriptionsOf(ownerId: string, page: PageRequest): Page<Subscription> {
    const rows = keysetPage<SubscriptionRow>(
      this.db,
      {
        from: "subscriptions",
        where: "owner_id = ?",
        params: [ownerId],
        order: "asc",
        total: countOf(this.db, "subscription_counts", ownerId),
      },
      page,
    );
    return mapPage(rows, toSubscription);
  }

  /**
   * The subscriptions an event of `emitterId` (of `ownerId`) on `channel` goes to: naming the
   * emitter, or its kind's glob in the owner's subscriptions.
   */
  matching(emitterId: string, ownerId: string, glob: "dc_*" | "p_*", channel: string): readonly Subscription[] {
    const all = this.subscribedTo(emitterId, ownerId, glob);
    return all.length === 0 ? all : all.filter((s) => s.eventName === channel);
  }

  /**
   * Every subscription to the emitter, on any channel (memoized per emitter: most have none, and
   * every event and run log of every emitter asks).
   */
  private subscribedTo(emitterId: string, ownerId: string, glob: "dc_*" | "p_*"): readonly Subscription[] {
    const load = (): Subscription[] =>
      statement<[string, string, string], SubscriptionRow>(
        this.db,
        `SELECT * FROM subscriptions WHERE emitter_id = ?
         UNION ALL SELECT * FROM subscriptions WHERE emitter_id = ? AND owner_id = ?`,
      )
        .all(emitterId, glob, ownerId)
        .map(toSubscription);
    return this.#matching.get(`${emitterId}\u0000${ownerId}\u0000${glob}`, load) ?? [];
  }

  /** Whether any subscription takes events of the emitter (on some channel), by its id or its kind's glob. */
  hasListeners(emitterId: string, ownerId: string, glob: "dc_*" | "p_*"): boolean {
    return (
      statement<[string, string, string], { one: number }>(
        this.db,
        `SELECT 1 AS one FROM subscriptions WHERE emitter_id = ?
         UNION ALL SELECT 1 AS one FROM subscriptions WHERE emitter_id = ? AND owner_id = ? LIMIT 1`,
      ).get(emitterId, glob, ownerId) !== undefined
    );
  }

  autoSubscriptionsOf(ownerId: string): AutoSubscription[] {
    return statement<[string], AutoSubscriptionRow>(this.db, "SELECT * FROM auto_subscriptions WHERE owner_id = ? ORDER BY seq")
      .all(ownerId)
      .map(toAuto);
  }
}
