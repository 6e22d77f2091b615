import { applyDedupe, orderByTs, type DedupeStrategy, type Emit } from "../../src/runner/dedupe.js";
import { formatEventId, nextEventIds, parseEventId } from "../../src/runner/eventIds.js";
import { RECENT_INVOCATIONS, type EmitterRuntimeState, type EventEmitted, type RunRecorded } from "./emitter.js";

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
}

export type RunDecision =
  | { readonly kind: "duplicate" }
  | { readonly kind: "db"; readonly events: [RunRecorded]; readonly warnings: string[] }
  | { readonly kind: "emits"; readonly events: [...EventEmitted[], RunRecorded]; readonly emitted: EventEmitted[]; readonly warnings: string[] };

const channelOf = (name: unknown) => (typeof name === "string" ? name : "");

/**
 * What a finished run leaves in the log: deduped, ts-ordered events with fresh ids and the state
 * after them; only the db stream when the run changed nothing but `this.db`; nothing at all for a
 * redelivered invocation that was already recorded.
 */
export function recordRun(command: RecordRun, state: EmitterRuntimeState): RunDecision {
  if (state.recentInvocations.includes(command.invocationId)) return { kind: "duplicate" };
  const ordered = orderByTs(command.emits, command.startedMs);
  const deduped = applyDedupe(command.strategy, state.dedupe, ordered);
  const { state: dedupe, warnings } = deduped;
  const kept = [...deduped.kept, ...(command.unconditional ?? [])];

  const ids = nextEventIds(state.lastEventId ? parseEventId(state.lastEventId) : undefined, command.nowMs, kept.length);
  const emitted: EventEmitted[] = kept.map((emit, i) => ({
    type: "EventEmitted",
    data: {
      emitterId: command.emitterId,
      id: formatEventId(ids[i]!),
      channel: channelOf(emit.meta.name),
      event: emit.event === undefined ? null : emit.event,
      summary: typeof emit.meta.summary === "string" ? emit.meta.summary : null,
      emitId: emit.meta.id === undefined || emit.meta.id === null ? null : String(emit.meta.id),
      ts: typeof emit.meta.ts === "number" ? emit.meta.ts : null,
      indexedAtMs: command.nowMs,
      invocationId: command.invocationId,
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
      lastEventId: emitted.length > 0 ? emitted[emitted.length - 1]!.data.id : state.lastEventId,
      recentInvocations: [...state.recentInvocations, command.invocationId].slice(-RECENT_INVOCATIONS),
    },
  };
  if (emitted.length === 0) return { kind: "db", events: [recorded], warnings };
  return { kind: "emits", events: [...emitted, recorded], emitted, warnings };
}
