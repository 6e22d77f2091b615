import { createHash } from "node:crypto";
import type { DomainEvent } from "../decider.js";

// Deliveries: what the router makes of an emitted event for one subscription, and the per-listener
// record of sending them. A webhook's deliveries live in deliveries-<listener id>: every attempt,
// and, while the webhook fails or is slow, the queue of what waits for it (in order), so the bus
// never holds a dead receiver's backlog and the schedule survives restarts.

/** What the router publishes on the deliveries topic, keyed by listener id. */
export interface Delivery {
  /** Stable across retries and re-routing: the webhook-id header. */
  readonly id: string;
  readonly listenerId: string;
  readonly subscriptionId: string;
  readonly emitterId: string;
  /** "" for the default channel, a name, "$errors" or "$logs". */
  readonly channel: string;
  /** The event's id (an emitted event's "<ms>-<seq>", a run log's invocation id). */
  readonly eventId: string;
  /** What a webhook receives: the item of event_summaries?expand=event (or of the $logs channel). */
  readonly payload: unknown;
  /** Emitters the event has passed through before its emitter (source chains; cycles are cut). */
  readonly chain: readonly string[];
  readonly routedAt: number;
  /** Set on a re-send asked for by a user: it is sent again even though it was delivered. */
  readonly resend?: number;
  /** On a re-send: the attempts made before it, so its attempts are numbered on from them. */
  readonly priorAttempts?: number;
}

/** The id of one event's delivery to one subscription: the same whichever node routes it, however often. */
export function deliveryId(emitterId: string, eventId: string, channel: string, subscriptionId: string): string {
  const digest = createHash("sha256")
    .update(JSON.stringify([emitterId, eventId, channel, subscriptionId]))
    .digest("base64url");
  return `msg_${digest.slice(0, 27)}`;
}

export interface AttemptResult {
  readonly deliveryId: string;
  readonly ok: boolean;
  /** The receiver's HTTP status, when it answered. */
  readonly status: number | null;
  readonly latencyMs: number;
  readonly error: string | null;
  readonly at: number;
}

/** Every delivery event says how the listener's queue stands after it: what waits, and when its head is due. */
interface QueueAfter {
  pending: number;
  headDueAt: number | null;
}

export type DeliveryAttempted = DomainEvent<
  "DeliveryAttempted",
  QueueAfter & {
    listenerId: string;
    deliveryId: string;
    subscriptionId: string;
    emitterId: string;
    channel: string;
    eventId: string;
    attempt: number;
    ok: boolean;
    status: number | null;
    latencyMs: number;
    error: string | null;
    at: number;
    /** When the next attempt is due; null when delivered (or given up). */
    nextAttemptAt: number | null;
  }
>;
/** Queued behind what already waits, in order; a delivery that just failed comes with its attempts and next time. */
export type DeliveriesQueued = DomainEvent<"DeliveriesQueued", QueueAfter & { listenerId: string; queued: Queued[]; at: number }>;
export type DeliveryDropped = DomainEvent<
  "DeliveryDropped",
  QueueAfter & { listenerId: string; deliveryId: string; reason: string; at: number }
>;
export type DeliveryEvent = DeliveryAttempted | DeliveriesQueued | DeliveryDropped;

export interface Queued {
  readonly delivery: Delivery;
  readonly attempts: number;
  readonly nextAttemptAt: number;
}

export interface ListenerDeliveries {
  /** What waits for the listener, oldest first; the head is the only one attempted. */
  readonly queue: readonly Queued[];
  /** Ids delivered or dropped lately: a re-routed copy is not sent twice. */
  readonly recentDone: readonly string[];
  /** Start of the current streak of failed attempts (null when the last attempt succeeded). */
  readonly failingSince: number | null;
  readonly consecutiveFailures: number;
}

export const RECENT_DONE = 1000;

export const emptyDeliveries: ListenerDeliveries = { queue: [], recentDone: [], failingSince: null, consecutiveFailures: 0 };

const done = (state: ListenerDeliveries, id: string): string[] => [...state.recentDone, id].slice(-RECENT_DONE);

export function evolveDeliveries(state: ListenerDeliveries, event: DeliveryEvent): ListenerDeliveries {
  switch (event.type) {
    case "DeliveriesQueued":
      return { ...state, queue: [...state.queue, ...event.data.queued] };
    case "DeliveryAttempted": {
      const d = event.data;
      const streak = d.ok
        ? { failingSince: null, consecutiveFailures: 0 }
        : { failingSince: state.failingSince ?? d.at, consecutiveFailures: state.consecutiveFailures + 1 };
      const inQueue = state.queue.findIndex((q) => q.delivery.id === d.deliveryId);
      if (d.nextAttemptAt === null) {
        // Delivered (or given up): off the queue if it was there.
        return {
          ...state,
          ...streak,
          queue: inQueue < 0 ? state.queue : state.queue.filter((_, i) => i !== inQueue),
          recentDone: done(state, d.deliveryId),
        };
      }
      if (inQueue < 0) return { ...state, ...streak };
      // A queued re-send counts its own attempts (for the back-off); the event numbers them on from the earlier ones.
      const queue = state.queue.map((q, i) =>
        i === inQueue ? { ...q, attempts: d.attempt - (q.delivery.priorAttempts ?? 0), nextAttemptAt: d.nextAttemptAt! } : q,
      );
      return { ...state, ...streak, queue };
    }
    case "DeliveryDropped":
      return {
        ...state,
        queue: state.queue.filter((q) => q.delivery.id !== event.data.deliveryId),
        recentDone: done(state, event.data.deliveryId),
      };
  }
}

export const foldDeliveries = (events: readonly DeliveryEvent[]) => events.reduce(evolveDeliveries, emptyDeliveries);

type Unannotated<E> = E extends DomainEvent<infer T, infer D> ? DomainEvent<T, Omit<D, keyof QueueAfter>> : never;

/** Adds to each event the queue's state after it (folded from `state`). */
function annotate(state: ListenerDeliveries, events: readonly Unannotated<DeliveryEvent>[]): DeliveryEvent[] {
  let current = state;
  return events.map((raw) => {
    const partial = { ...raw, data: { ...raw.data, pending: 0, headDueAt: null } } as DeliveryEvent;
    current = evolveDeliveries(current, partial);
    return {
      ...partial,
      data: { ...partial.data, pending: current.queue.length, headDueAt: current.queue[0]?.nextAttemptAt ?? null },
    } as DeliveryEvent;
  });
}

/** How a failing listener is retried, and when it is given up. */
export interface RetryPolicy {
  /** Delay before attempt n+1 after n failed attempts, jitter applied by `random` in [0, 1). */
  readonly delays: readonly number[];
  /** A listener failing without a success for this long is disabled. */
  readonly disableAfterMs: number;
}

/** The delay before the next attempt: the schedule's step for this attempt, ±20 % jitter. */
export function nextDelay(policy: RetryPolicy, attempts: number, random: number): number {
  const base = policy.delays[Math.min(attempts - 1, policy.delays.length - 1)] ?? 1000;
  return Math.round(base * (0.8 + 0.4 * random));
}

/** What to do with records from the bus: send at once (the listener is healthy), or queue behind what already waits. */
export function plan(
  state: ListenerDeliveries,
  incoming: readonly Delivery[],
): { send: Delivery[]; queue: Delivery[]; duplicates: string[] } {
  const known = new Set([...state.recentDone, ...state.queue.map((q) => q.delivery.id)]);
  const fresh: Delivery[] = [];
  const duplicates: string[] = [];
  for (const delivery of incoming) {
    const seen = known.has(delivery.id) && delivery.resend === undefined;
    if (seen) duplicates.push(delivery.id);
    else {
      known.add(delivery.id);
      fresh.push(delivery);
    }
  }
  return state.queue.length === 0 ? { send: fresh, queue: [], duplicates } : { send: [], queue: fresh, duplicates };
}

/**
 * What a worker's turn for one listener leaves in its stream: the attempts it made (in order), then
 * what it did not send queued behind the queue. A failed attempt of a delivery that was not queued
 * yet goes to the queue with its attempt count and next time (the listener is failing: what follows
 * waits behind it, in order).
 */
export function recordTurn(
  state: ListenerDeliveries,
  turn: {
    listenerId: string;
    attempts: readonly (AttemptResult & { delivery: Delivery })[];
    unsent: readonly Delivery[];
    now: number;
    random: number;
  },
  policy: RetryPolicy,
): DeliveryEvent[] {
  const events: Unannotated<DeliveryEvent>[] = [];
  const toQueue: Queued[] = [];
  for (const attempt of turn.attempts) {
    const inQueue = state.queue.find((q) => q.delivery.id === attempt.deliveryId);
    const n = (inQueue?.attempts ?? 0) + 1;
    const next = attempt.ok ? null : attempt.at + nextDelay(policy, n, turn.random);
    const d = attempt.delivery;
    events.push({
      type: "DeliveryAttempted",
      data: {
        listenerId: turn.listenerId,
        deliveryId: d.id,
        subscriptionId: d.subscriptionId,
        emitterId: d.emitterId,
        channel: d.channel,
        eventId: d.eventId,
        attempt: n + (d.priorAttempts ?? 0),
        ok: attempt.ok,
        status: attempt.status,
        latencyMs: attempt.latencyMs,
        error: attempt.error,
        at: attempt.at,
        nextAttemptAt: next,
      },
    });
    if (!attempt.ok && !inQueue) toQueue.push({ delivery: d, attempts: n, nextAttemptAt: next! });
  }
  const queued = new Set(state.queue.map((q) => q.delivery.id));
  for (const d of turn.unsent) if (!queued.has(d.id)) toQueue.push({ delivery: d, attempts: 0, nextAttemptAt: turn.now });
  if (toQueue.length > 0) events.push({ type: "DeliveriesQueued", data: { listenerId: turn.listenerId, queued: toQueue, at: turn.now } });
  return annotate(state, events);
}

/** Giving up: everything queued is dropped with the reason (the webhook is disabled meanwhile). */
export function dropQueue(state: ListenerDeliveries, listenerId: string, reason: string, at: number): DeliveryEvent[] {
  return annotate(
    state,
    state.queue.map((q) => ({ type: "DeliveryDropped" as const, data: { listenerId, deliveryId: q.delivery.id, reason, at } })),
  );
}

/** Whether the listener has failed long enough to be disabled. */
export const givenUp = (state: ListenerDeliveries, now: number, policy: RetryPolicy) =>
  state.failingSince !== null && now - state.failingSince >= policy.disableAfterMs;
