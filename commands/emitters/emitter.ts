import { DomainError, type DomainEvent } from "../decider.js";
import { applyDedupe, orderByTs, type DedupeState, type DedupeStrategy, type Emit } from "./dedupe.js";
import { compareEventIds, formatEventId, nextEventIds, parseEventId } from "./eventIds.js";

// An emitter (a source or a workflow) has two streams:
//   emitter-<id>: its emitted events, each run's events appended together with the state they
//                 leave behind (RunRecorded), so a crash never keeps events without their dedupe state;
//                 retention keeps the newest 100 EventEmitted (and everything after them);
//   sourcedb-<id>: RunRecorded for runs that only changed `this.db`, keeping the latest one.
// The emitter's state is the newer (by log position) of the two streams' last RunRecorded.

export type EventEmitted = DomainEvent<
  "EventEmitted",
  {
    emitterId: string;
    /** "<epoch ms>-<seq>" */
    id: string;
    /** "" for the default channel. */
    channel: string;
    event: unknown;
    summary: string | null;
    /** The id given to $emit (dedupe key); the event's own id when the emit gave none. */
    emitId: string | null;
    ts: number | null;
    indexedAtMs: number;
    invocationId: string;
    /** Emitters the run's triggering event passed through (source → source chains); absent when none. */
    chain?: string[];
  }
>;

export interface EmitterRuntimeState {
  readonly dedupe: DedupeState;
  readonly db: Record<string, unknown>;
  readonly lastEventId: string | null;
  /**
   * Recently recorded invocations whose id can come again in another bus record (a timer tick that
   * every scheduler node queues, an event routed again) or that came without a bus record: a
   * repeat found here is not run again. An id minted for one bus record (`uniqueToRecord`: an HTTP
   * request, a manual run) is not kept: only a redelivery of that record brings it again, and the
   * deliveries below tell those.
   */
  readonly recentInvocations: readonly string[];
  /**
   * The bus record of the last invocation recorded that came over the bus, with the greatest
   * append time recorded on its partition (see alreadyRecorded).
   */
  readonly lastDelivery?: Delivery;
  /**
   * The same for the other partitions this emitter's invocations came over before (the topic was
   * repartitioned), the most recent first, at most EARLIER_PARTITIONS; absent when none.
   */
  readonly earlierDeliveries?: readonly Delivery[];
}

/** Where on the bus an invocation came from: its record's partition, offset and append time. */
export interface Delivery {
  readonly partition: number;
  /** Decimal int64, as the bus reports it. */
  readonly offset: string;
  readonly timestamp: number;
}

export type RunRecorded = DomainEvent<"RunRecorded", EmitterRuntimeState & { emitterId: string; invocationId: string; at: number }>;
export type EventsDeleted = DomainEvent<"EventsDeleted", { emitterId: string; startId: string | null; endId: string | null; at: number }>;
export type EmitterEvent = EventEmitted | RunRecorded | EventsDeleted;

/** Also the largest run batch (HEADWATER_RUN_BATCH_MAX): the ids a batch keeps all fit in the window. */
export const RECENT_INVOCATIONS = 128;

/** Partitions other than the last one whose last recorded delivery an emitter keeps. */
export const EARLIER_PARTITIONS = 16;

export const emptyRuntimeState: EmitterRuntimeState = { dedupe: {}, db: {}, lastEventId: null, recentInvocations: [] };

/** The state a RunRecorded leaves (the newer of the two streams' last one is the emitter's state). */
export const stateOf = (recorded: RunRecorded["data"]): EmitterRuntimeState => {
  const { dedupe, db, lastEventId, recentInvocations, lastDelivery, earlierDeliveries } = recorded;
  return {
    dedupe,
    db,
    lastEventId,
    recentInvocations,
    ...(lastDelivery ? { lastDelivery } : {}),
    ...(earlierDeliveries ? { earlierDeliveries } : {}),
  };
};

/** The shape of an id minted for one request (`newId("inv")` in src/ids.ts); ids derived from a tick or an event have another. */
const MINTED_INVOCATION_ID = /^inv_[0-9a-z]{16}$/;

/**
 * The state of an emitter as read from its log. A RunRecorded written before ids minted for one
 * bus record were left out of the window still lists them (up to 128, ~3 KB carried by every
 * run): when it has a last delivery, every one of them came over the bus before it, so they are
 * dropped and the deliveries tell their redeliveries (a limit of that one step is in
 * docs/decisions.md, "Redelivery").
 */
export function stateFromLog(recorded: RunRecorded["data"]): EmitterRuntimeState {
  const state = stateOf(recorded);
  if (!state.lastDelivery || !state.recentInvocations.some((id) => MINTED_INVOCATION_ID.test(id))) return state;
  return { ...state, recentInvocations: state.recentInvocations.filter((id) => !MINTED_INVOCATION_ID.test(id)) };
}

/**
 * Whether an invocation was recorded already. One emitter's invocations come over one bus
 * partition in offset order, but the bus commits only its contiguous completed prefix, so after a
 * crash it redelivers everything past the oldest unfinished record of the partition: behind one
 * slow run, any number of this emitter's recorded invocations. Those are the records at or before
 * the last one recorded on their partition, and appended no later than the newest recorded there
 * (a bus whose offsets started again from zero brings newer records at low offsets: those run).
 * Ids that come again in another record (timer ticks, routed events) and invocations that did not
 * come over the bus are caught by the recent ids.
 */
export function alreadyRecorded(state: EmitterRuntimeState, invocationId: string, delivery?: Delivery): boolean {
  if (state.recentInvocations.includes(invocationId)) return true;
  if (!delivery) return false;
  const last = deliveryOn(state, delivery.partition);
  if (!last) return false;
  return BigInt(delivery.offset) <= BigInt(last.offset) && delivery.timestamp <= last.timestamp;
}

/** What the emitter recorded last from `partition`: its offset, and the greatest append time recorded there. */
function deliveryOn(state: EmitterRuntimeState, partition: number): Delivery | undefined {
  if (state.lastDelivery?.partition === partition) return state.lastDelivery;
  return state.earlierDeliveries?.find((d) => d.partition === partition);
}

/**
 * The deliveries after recording a run that came in `delivery`. The partition's time is the
 * greatest recorded there, not the last record's: producers whose clocks disagree append records
 * whose times go back and forth, and a redelivered record is at or before the last offset and at
 * or before that greatest time, whatever its producer's clock said. (A record is recorded only
 * when it is past the last offset, or newer than that time: a bus started again from zero.)
 */
function deliveriesAfter(
  state: EmitterRuntimeState,
  delivery: Delivery | undefined,
): Pick<EmitterRuntimeState, "lastDelivery" | "earlierDeliveries"> {
  const kept = {
    ...(state.lastDelivery ? { lastDelivery: state.lastDelivery } : {}),
    ...(state.earlierDeliveries ? { earlierDeliveries: state.earlierDeliveries } : {}),
  };
  if (!delivery) return kept;
  const before = deliveryOn(state, delivery.partition);
  const lastDelivery = before && before.timestamp > delivery.timestamp ? { ...delivery, timestamp: before.timestamp } : delivery;
  const previous = state.lastDelivery;
  if (!previous || previous.partition === delivery.partition) return { ...kept, lastDelivery };
  const earlier = [previous, ...(state.earlierDeliveries ?? []).filter((d) => d.partition !== delivery.partition)].slice(
    0,
    EARLIER_PARTITIONS,
  );
  return { lastDelivery, earlierDeliveries: earlier };
}

export interface RecordRun {
  readonly emitterId: string;
  readonly invocationId: string;
  readonly strategy: DedupeStrategy | undefined;
  readonly emits: readonly Emit[];
  /** Appended after the deduplicated emits and never deduplicated themselves: a run's error on $errors. */
  readonly unconditional?: readonly Emit[];
  /** The db after the run, and whether the run changed it. */
  readonly db: Record<string, unknown>;
  readonly dbChanged: boolean;
  readonly startedMs: number;
  readonly nowMs: number;
  /** The triggering event's chain of emitters (runs triggered through subscriptions). */
  readonly chain?: readonly string[];
  /** The bus record the invocation came in, when it came over the bus. */
  readonly delivery?: Delivery;
  /**
   * Its id was minted for this one bus record (an HTTP request, a manual run): only a redelivery
   * of the record brings it again, which `delivery` tells, so the id is not kept in the window.
   */
  readonly uniqueToRecord?: boolean;
  /**
   * It came in no bus record: it was handed to the runner in the process that awaits its answer
   * (Bus.offerLocally), and only a retry of the runner's call there brings it again, which skips
   * it once answered. Its id is not kept in the window either.
   */
  readonly local?: boolean;
}

export type RunDecision =
  | { readonly kind: "duplicate" }
  | { readonly kind: "db"; readonly events: [RunRecorded]; readonly warnings: string[] }
  | {
      readonly kind: "emits";
      readonly events: [...EventEmitted[], RunRecorded];
      readonly emitted: EventEmitted[];
      readonly warnings: string[];
    };

const channelOf = (name: unknown) => (typeof name === "string" ? name : "");

/**
 * What a finished run leaves in the log: deduped, ts-ordered events with fresh ids and the state
 * after them; only the db stream when the run changed nothing but `this.db`; nothing at all for a
 * redelivered invocation that was already recorded.
 */
export function recordRun(command: RecordRun, state: EmitterRuntimeState): RunDecision {
  if (alreadyRecorded(state, command.invocationId, command.delivery)) return { kind: "duplicate" };
  const ordered = orderByTs(command.emits, command.startedMs);
  const deduped = applyDedupe(command.strategy, state.dedupe, ordered);
  const { state: dedupe, warnings } = deduped;
  const kept = [...deduped.kept, ...(command.unconditional ?? [])];

  const ids = nextEventIds(state.lastEventId ? parseEventId(state.lastEventId) : undefined, command.nowMs, kept.length);
  const emitted: EventEmitted[] = kept.map((emit, i) => ({
    type: "EventEmitted",
    data: {
      emitterId: command.emitterId,
      id: formatEventId(ids[i]),
      channel: channelOf(emit.meta.name),
      event: emit.event === undefined ? null : emit.event,
      summary: typeof emit.meta.summary === "string" ? emit.meta.summary : null,
      emitId: emit.meta.id === undefined || emit.meta.id === null ? formatEventId(ids[i]) : String(emit.meta.id),
      ts: typeof emit.meta.ts === "number" ? emit.meta.ts : null,
      indexedAtMs: command.nowMs,
      invocationId: command.invocationId,
      ...(command.chain && command.chain.length > 0 ? { chain: [...command.chain] } : {}),
    },
  }));
  const recorded: RunRecorded = {
    type: "RunRecorded",
    data: {
      emitterId: command.emitterId,
      invocationId: command.invocationId,
      at: command.nowMs,
      dedupe,
      db: command.db,
      lastEventId: emitted.length > 0 ? emitted[emitted.length - 1].data.id : state.lastEventId,
      recentInvocations:
        (command.uniqueToRecord && command.delivery) || command.local
          ? state.recentInvocations
          : [...state.recentInvocations, command.invocationId].slice(-RECENT_INVOCATIONS),
      ...deliveriesAfter(state, command.delivery),
    },
  };
  if (emitted.length === 0) return { kind: "db", events: [recorded], warnings };
  return { kind: "emits", events: [...emitted, recorded], emitted, warnings };
}

/** A batch of runs decided in order, each on the state the previous one left. */
export interface BatchDecision {
  readonly decisions: RunDecision[];
  /** Every run's EventEmitted, then one RunRecorded with the state after the last run (none when all were duplicates). */
  readonly events: (EventEmitted | RunRecorded)[];
  /** Whether any run emitted (the events go to the emitter stream, else to the db stream). */
  readonly emitted: boolean;
  readonly state: EmitterRuntimeState;
}

/**
 * Decides a batch of one emitter's runs: dedupe, event ids and the recent-invocations window go
 * on from run to run, and only the last state is recorded (the state of the runs before it is
 * contained in it: the window holds RECENT_INVOCATIONS, a whole batch, and a batch's records are in
 * offset order on their partition, so its last delivery covers the ones before).
 */
export function recordRuns(commands: readonly RecordRun[], state: EmitterRuntimeState): BatchDecision {
  const decisions: RunDecision[] = [];
  const emitted: EventEmitted[] = [];
  let last: RunRecorded | undefined;
  let current = state;
  for (const command of commands) {
    const decision = recordRun(command, current);
    decisions.push(decision);
    if (decision.kind === "duplicate") continue;
    if (decision.kind === "emits") emitted.push(...decision.emitted);
    last = decision.events[decision.events.length - 1] as RunRecorded;
    current = stateOf(last.data);
  }
  return { decisions, events: last ? [...emitted, last] : [], emitted: emitted.length > 0, state: current };
}

export interface DeleteEvents {
  readonly emitterId: string;
  readonly startId: string | null;
  readonly endId: string | null;
  readonly at: number;
}

/** The seed's DELETE rules on ids: neither = all, start only = it and later, end only = it and earlier, both = the inclusive range. */
export function deleteEvents(command: DeleteEvents): [EventsDeleted] {
  const start = command.startId === null ? undefined : parseEventId(command.startId);
  const end = command.endId === null ? undefined : parseEventId(command.endId);
  if ((command.startId !== null && !start) || (command.endId !== null && !end)) {
    throw new DomainError("invalid_request", "event ids look like <epoch ms>-<sequence>");
  }
  if (start && end && compareEventIds(start, end) > 0) {
    throw new DomainError("invalid_request", "start_id is after end_id", [{ path: "query.start_id", message: "must not be after end_id" }]);
  }
  return [{ type: "EventsDeleted", data: { ...command } }];
}
