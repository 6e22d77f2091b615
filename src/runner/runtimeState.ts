import type { EventStore, RecordedEvent } from "../store/eventStore.js";
import { WrongExpectedRevisionError } from "../store/eventStore.js";
import {
  emitterStream,
  emptyRuntimeState,
  sourceDbStream,
  type EmitterRuntimeState,
  type EventEmitted,
  type RunRecorded,
} from "../../commands/emitters/emitter.js";
import { recordRun, type RecordRun, type RunDecision } from "../../commands/emitters/recordRun.js";

export interface Loaded {
  readonly state: EmitterRuntimeState;
  /** Revisions the next append expects (undefined: the stream does not exist). */
  readonly emitterRevision: number | undefined;
  readonly dbRevision: number | undefined;
}

async function lastRunRecorded(store: EventStore, stream: string): Promise<{ event?: RecordedEvent; revision?: number }> {
  const revision = await store.streamRevision(stream);
  if (revision === undefined) return {};
  // RunRecorded closes every append that carries one; only EventsDeleted markers can follow it.
  for (let from = revision; from >= 0; from -= 20) {
    const batch = await store.readStream(stream, { direction: "backwards", fromRevision: from, maxCount: 20 });
    const found = batch.find((e) => e.type === "RunRecorded");
    if (found) return { event: found, revision };
    if (batch.length < 20) break;
  }
  return { revision };
}

/** The emitter's state: the newer (by log position) of its two streams' last RunRecorded. */
export async function loadRuntimeState(store: EventStore, emitterId: string): Promise<Loaded> {
  const [emits, db] = await Promise.all([
    lastRunRecorded(store, emitterStream(emitterId)),
    lastRunRecorded(store, sourceDbStream(emitterId)),
  ]);
  const newest = [emits.event, db.event]
    .filter((e): e is RecordedEvent => e !== undefined)
    .sort((a, b) => b.position - a.position)[0];
  const data = newest?.data as RunRecorded["data"] | undefined;
  const state: EmitterRuntimeState = data
    ? { dedupe: data.dedupe, db: data.db, lastEventId: data.lastEventId, recentInvocations: data.recentInvocations }
    : emptyRuntimeState;
  return { state, emitterRevision: emits.revision, dbRevision: db.revision };
}

export interface Recorded {
  readonly decision: RunDecision;
  /** Log position of the append, when there was one. */
  readonly position: number | undefined;
  readonly emitted: EventEmitted[];
}

/**
 * Records a finished run: decides on the current state and appends with the expected revision;
 * when another writer (a hook on another node) got there first, decides again on fresh state.
 */
export interface RecordOptions {
  /** State read just before the run: saves a read; a conflict on append reads again anyway. */
  readonly loaded?: Loaded;
  /**
   * Another append that belongs with this run (its log), started as soon as the run is decided so
   * both share a group commit; called once, not for a duplicate.
   */
  readonly alongside?: (decision: Exclude<RunDecision, { kind: "duplicate" }>) => Promise<number>;
}

export async function recordRunOutcome(store: EventStore, command: RecordRun, options: RecordOptions = {}): Promise<Recorded> {
  let alongside: Promise<number> | undefined;
  for (let attempt = 0; ; attempt++) {
    const loaded = attempt === 0 && options.loaded ? options.loaded : await loadRuntimeState(store, command.emitterId);
    const decision = recordRun(command, loaded.state);
    if (decision.kind === "duplicate") {
      await alongside;
      return { decision, position: undefined, emitted: [] };
    }
    alongside ??= options.alongside?.(decision);
    const [stream, revision] =
      decision.kind === "emits"
        ? [emitterStream(command.emitterId), loaded.emitterRevision]
        : [sourceDbStream(command.emitterId), loaded.dbRevision];
    try {
      const result = await store.append(stream, decision.events, { expectedRevision: revision ?? "no_stream" });
      if (decision.kind === "db" && result.nextExpectedRevision > 0) {
        // The db stream only ever needs its newest state.
        await store.truncateBefore(stream, result.nextExpectedRevision);
      }
      const position = Math.max(result.position, (await alongside) ?? 0);
      return { decision, position, emitted: decision.kind === "emits" ? decision.emitted : [] };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < 10) continue;
      throw error;
    }
  }
}
