import type { DomainEvent, Evolver } from "../decider.js";
import type { DedupeState } from "../../src/runner/dedupe.js";

// An emitter (a source, later a workflow) has two streams:
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
    /** The id given to $emit (dedupe key). */
    emitId: string | null;
    ts: number | null;
    indexedAtMs: number;
    invocationId: string;
  }
>;

export interface EmitterRuntimeState {
  readonly dedupe: DedupeState;
  readonly db: Record<string, unknown>;
  readonly lastEventId: string | null;
  /** Recently recorded invocations: a redelivered invocation found here is not run again. */
  readonly recentInvocations: readonly string[];
}

export type RunRecorded = DomainEvent<"RunRecorded", EmitterRuntimeState & { emitterId: string; invocationId: string; at: number }>;
export type EventsDeleted = DomainEvent<"EventsDeleted", { emitterId: string; startId: string | null; endId: string | null; at: number }>;
export type EmitterEvent = EventEmitted | RunRecorded | EventsDeleted;

export const emitterStream = (emitterId: string) => `emitter-${emitterId}`;
export const sourceDbStream = (emitterId: string) => `sourcedb-${emitterId}`;

export const RECENT_INVOCATIONS = 50;

export const emptyRuntimeState: EmitterRuntimeState = { dedupe: {}, db: {}, lastEventId: null, recentInvocations: [] };

/** Folds one stream; callers pick the newer of the two streams' results. */
export const emitterState: Evolver<EmitterRuntimeState, EmitterEvent> = {
  initialState: () => emptyRuntimeState,
  evolve(state, event) {
    if (event.type !== "RunRecorded") return state;
    const { dedupe, db, lastEventId, recentInvocations } = event.data;
    return { dedupe, db, lastEventId, recentInvocations };
  },
};
