// The emitter aggregate's I/O: its state is the newer of its two streams' last RunRecorded, and a
// run's decision goes to one of them (see emitter.ts). Appends go through the one retry loop.
import os from "node:os";
import { LRUCache } from "lru-cache";
import type { EventStore, RecordedEvent } from "../../src/store/eventStore.js";
import { decideAndAppend, type HandleOptions } from "../handler.js";
import { streams } from "../streams.js";
import {
  deleteEvents,
  emptyRuntimeState,
  recordRun,
  recordRuns,
  stateFromLog,
  type DeleteEvents,
  type EmitterRuntimeState,
  type EventEmitted,
  type RecordRun,
  type RunDecision,
  type RunRecorded,
} from "./emitter.js";

export interface LoadedEmitter {
  readonly state: EmitterRuntimeState;
  /** Revisions the next append expects (undefined: the stream does not exist). */
  readonly emitterRevision: number | undefined;
  readonly dbRevision: number | undefined;
}

export interface RecordedRun {
  readonly decision: RunDecision;
  /** Log position of the append, when there was one. */
  readonly position: number | undefined;
  readonly emitted: EventEmitted[];
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

/**
 * Starts the append that goes beside a run's own (its log), in the same group commit. It is
 * awaited once the run's append succeeded; when that append fails, so did this one (the group's
 * transaction), and the failure thrown is the run's. So it is marked handled here: left unhandled,
 * its rejection would end the process (it did, when the log stayed locked past SQLite's busy
 * timeout: test/sources/batching.test.ts).
 */
function startAlongside<D>(
  start: ((decided: D) => Promise<number | undefined>) | undefined,
  decided: D,
): Promise<number | undefined> | undefined {
  const started = start?.(decided);
  started?.catch(() => undefined);
  return started;
}

export interface RecordedBatch {
  /** One per command, in order (a run already recorded is a duplicate). */
  readonly decisions: RunDecision[];
  readonly position: number | undefined;
}

/**
 * What the cached states may hold, estimated from their JSON: an eighth of a GB, less on a small
 * machine. Most states are a few hundred bytes (100,000 of them ~50 MB); a source keeping a large
 * `this.db` (up to 60 KB) counts for what it keeps.
 */
export const CACHED_STATE_BYTES = Math.min(128 * 1024 * 1024, Math.floor(os.totalmem() / 16));

/** A db that did not change is the same object from run to run: measured once. */
const measuredDb = new WeakMap<object, number>();

function estimatedBytes(loaded: LoadedEmitter): number {
  const { db, dedupe, recentInvocations, earlierDeliveries } = loaded.state;
  let dbBytes = measuredDb.get(db);
  if (dbBytes === undefined) {
    dbBytes = JSON.stringify(db).length;
    measuredDb.set(db, dbBytes);
  }
  const ids = (dedupe.unique?.length ?? 0) + recentInvocations.length + (earlierDeliveries?.length ?? 0);
  return 512 + dbBytes + 64 * ids;
}

export class EmitterStore {
  /**
   * Emitter states with the revisions they were read at, kept by the runner between batches: up to
   * `cache.states` emitters (the node passes its per-source memo bound, PER_SOURCE_MEMO_ENTRIES)
   * within CACHED_STATE_BYTES. (At 10,000 entries, a node with 10,001 busy sources missed every
   * time: each run read both of its streams back, 29 % more event-loop CPU per run measured with
   * 5,000 busy sources over 4,000 entries.)
   */
  readonly #cache: LRUCache<string, LoadedEmitter>;

  constructor(
    private readonly store: EventStore,
    cache: { readonly states: number },
  ) {
    this.#cache = new LRUCache<string, LoadedEmitter>({ max: cache.states, maxSize: CACHED_STATE_BYTES, sizeCalculation: estimatedBytes });
  }

  /**
   * The emitter's state from memory when both its streams are still at the revisions it was read
   * at (one read of both revisions instead of reading both streams back), else read again.
   */
  async loadCached(emitterId: string): Promise<LoadedEmitter> {
    const cached = this.#cache.get(emitterId);
    if (cached) {
      const [emits, db] = await this.store.streamRevisions([streams.emitter(emitterId), streams.emitterDb(emitterId)]);
      if (emits === cached.emitterRevision && db === cached.dbRevision) return cached;
    }
    const loaded = await this.load(emitterId);
    this.#cache.set(emitterId, loaded);
    return loaded;
  }

  /**
   * Records a batch of finished runs of one emitter with one append: each run decided on the state
   * the previous one left (dedupe sees the batch's earlier runs), all their events, then the state
   * after the last one. `alongside` gets every non-duplicate decision at once (their logs: one
   * more append in the same group commit). A conflict reads the state again and decides again.
   */
  async recordBatch(
    commands: readonly RecordRun[],
    options: {
      loaded?: LoadedEmitter;
      alongside?: (decisions: RunDecision[]) => Promise<number | undefined>;
    } & HandleOptions = {},
  ): Promise<RecordedBatch> {
    const emitterId = commands[0].emitterId;
    let alongside: Promise<number | undefined> | undefined;
    let decisions: RunDecision[] = [];
    let preloaded = options.loaded;
    let after: LoadedEmitter | undefined;
    let stream = "db" as "emits" | "db";
    const appended = await decideAndAppend(
      this.store,
      async () => {
        const loaded = preloaded ?? (await this.load(emitterId));
        preloaded = undefined; // a conflict means it is stale: read again
        return loaded;
      },
      (loaded) => {
        const batch = recordRuns(commands, loaded.state);
        decisions = batch.decisions;
        if (batch.events.length === 0) {
          after = loaded;
          return undefined;
        }
        alongside ??= startAlongside(options.alongside, decisions);
        stream = batch.emitted ? "emits" : "db";
        after = { ...loaded, state: batch.state };
        return stream === "emits"
          ? { stream: streams.emitter(emitterId), events: batch.events, expectedRevision: loaded.emitterRevision ?? "no_stream" }
          : { stream: streams.emitterDb(emitterId), events: batch.events, expectedRevision: loaded.dbRevision ?? "no_stream" };
      },
      options,
    );
    if (appended.revision !== undefined && after) {
      after = stream === "emits" ? { ...after, emitterRevision: appended.revision } : { ...after, dbRevision: appended.revision };
      if (stream === "db" && appended.revision > 0) {
        // The db stream only ever needs its newest state.
        await this.store.truncateBefore(streams.emitterDb(emitterId), appended.revision);
      }
    }
    if (after) this.#cache.set(emitterId, after);
    else this.#cache.delete(emitterId);
    const position = Math.max(appended.position ?? 0, (await alongside) ?? 0);
    return { decisions, position: appended.position === undefined && alongside === undefined ? undefined : position };
  }

  /** The emitter's state: the newer (by log position) of its two streams' last RunRecorded. */
  async load(emitterId: string): Promise<LoadedEmitter> {
    const [emits, db] = await Promise.all([
      lastRunRecorded(this.store, streams.emitter(emitterId)),
      lastRunRecorded(this.store, streams.emitterDb(emitterId)),
    ]);
    const newest = [emits.event, db.event].filter((e): e is RecordedEvent => e !== undefined).sort((a, b) => b.position - a.position)[0];
    const state = newest ? stateFromLog(newest.data as RunRecorded["data"]) : emptyRuntimeState;
    return { state, emitterRevision: emits.revision, dbRevision: db.revision };
  }

  /**
   * Records a finished run: decided on the current state (`loaded`, read just before the run,
   * saves a read; a conflict reads again), appended at the revision read. `alongside` starts
   * another append that belongs with the run (its log) as soon as the run is decided, so both share
   * a group commit; it is not called for a duplicate.
   */
  async record(
    command: RecordRun,
    options: {
      loaded?: LoadedEmitter;
      alongside?: (decision: Exclude<RunDecision, { kind: "duplicate" }>) => Promise<number | undefined>;
    } & HandleOptions = {},
  ): Promise<RecordedRun> {
    let alongside: Promise<number | undefined> | undefined;
    let decision: RunDecision = { kind: "duplicate" };
    let preloaded = options.loaded;
    const appended = await decideAndAppend(
      this.store,
      async () => {
        const loaded = preloaded ?? (await this.load(command.emitterId));
        preloaded = undefined; // a conflict means it is stale: read again
        return loaded;
      },
      (loaded) => {
        decision = recordRun(command, loaded.state);
        if (decision.kind === "duplicate") return undefined;
        alongside ??= startAlongside(options.alongside, decision);
        return decision.kind === "emits"
          ? { stream: streams.emitter(command.emitterId), events: decision.events, expectedRevision: loaded.emitterRevision ?? "no_stream" }
          : { stream: streams.emitterDb(command.emitterId), events: decision.events, expectedRevision: loaded.dbRevision ?? "no_stream" };
      },
      options,
    );
    const final = decision as RunDecision;
    if (final.kind === "db" && appended.revision !== undefined && appended.revision > 0) {
      // The db stream only ever needs its newest state.
      await this.store.truncateBefore(streams.emitterDb(command.emitterId), appended.revision);
    }
    const position = Math.max(appended.position ?? 0, (await alongside) ?? 0);
    return {
      decision: final,
      position: final.kind === "duplicate" ? undefined : position,
      emitted: final.kind === "emits" ? final.emitted : [],
    };
  }

  /** Appends a deletion (asynchronous for readers: listings drop the events once projected). */
  async deleteEvents(command: DeleteEvents, options: HandleOptions = {}): Promise<number | undefined> {
    const appended = await decideAndAppend(
      this.store,
      async () => undefined,
      () => ({ stream: streams.emitter(command.emitterId), events: deleteEvents(command), expectedRevision: "any" }),
      options,
    );
    return appended.position;
  }
}
