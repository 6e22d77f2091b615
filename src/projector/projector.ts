import type { Database } from "better-sqlite3";
import type { AllSubscription, EventStore, RecordedEvent } from "../store/eventStore.js";
import { ATTACHED_LOG, type Projection } from "./projection.js";
import { log } from "../observability/log.js";
import { statement } from "../readModels/statements.js";

type Waiter = { position: number; resolve: () => void; reject: (error: unknown) => void };
export type AppliedListener = (events: readonly RecordedEvent[]) => void;

/** The projector's pauses before reading the log again after a failure: doubled from the first up to the last. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;

/** How long a whole catch-up (a node's start, a rebuild) may go with nothing projected before it gives up. */
export const CATCH_UP_STALL_MS = 120_000;

export interface CatchUpOptions {
  /** Gives up after this long with nothing projected (default CATCH_UP_STALL_MS). */
  readonly stallMs?: number;
  /** How often `onProgress` hears of a catch-up that is still moving (default 10 s). */
  readonly reportEveryMs?: number;
  readonly onProgress?: (position: number, head: number) => void;
}

/**
 * Feeds every projection from $all into the node's read-model database. Each batch and the
 * checkpoints it moves are one transaction. Writers await `waitFor(position)` for read-your-writes.
 */
export class Projector {
  #position = 0;
  #subscription: AllSubscription | undefined;
  #waiters: Waiter[] = [];
  #listeners = new Set<AppliedListener>();
  #failure: unknown;
  #stopped = false;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = 0;
  readonly #checkpoints = new Map<string, number>();
  /** Event type -> indexes of the projections that handle it. */
  readonly #readers = new Map<string, number[]>();

  constructor(
    private readonly store: EventStore,
    private readonly db: Database,
    private readonly projections: readonly Projection[],
    /** Events per read-model transaction (a rebuild takes larger ones). */
    private readonly batchSize = 500,
    /** Types the projections read from the attached log themselves (SubscribeToAllOptions.leaveDataOf; a rebuild). */
    private readonly leaveDataOf?: ReadonlySet<string>,
  ) {
    projections.forEach((projection, index) => {
      for (const type of projection.handles) {
        const readers = this.#readers.get(type);
        if (readers === undefined) this.#readers.set(type, [index]);
        else readers.push(index);
      }
    });
  }

  /** Position of the last event every projection has processed. */
  get position(): number {
    return this.#position;
  }

  start(): void {
    this.#prepareSchema();
    this.#subscribe();
  }

  #subscribe(): void {
    const from = Math.min(...this.projections.map((p) => this.#checkpoints.get(p.name) ?? 0));
    this.#position = from;
    this.#subscription = this.store.subscribeToAll({
      fromPosition: from,
      batchSize: this.batchSize,
      leaveDataOf: this.leaveDataOf,
      onEvents: (events) => this.#applyBatch(events),
      onError: (error) => this.#failed(error),
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    await this.#subscription?.stop();
    this.#subscription = undefined;
  }

  /** Resolves once the read models include everything up to `position`. */
  async waitFor(position: number, timeoutMs = 30_000): Promise<void> {
    if (!(await this.#reached(position, timeoutMs))) {
      throw new Error(`read models did not reach position ${position} within ${timeoutMs} ms (at ${this.#position})`);
    }
  }

  /** True once the read models include `position`, false after `timeoutMs` without; rejects if the projector failed. */
  #reached(position: number, timeoutMs: number): Promise<boolean> {
    if (this.#failure) return Promise.reject(this.#failure instanceof Error ? this.#failure : new Error("the projector failed"));
    if (position <= this.#position) return Promise.resolve(true);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        position,
        resolve: () => (clearTimeout(timer), resolve(true)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Waits until everything committed to the log so far (by any process) is projected. */
  async catchUp(timeoutMs?: number): Promise<void> {
    await this.waitFor(await this.store.headPosition(), timeoutMs);
  }

  /**
   * Waits until everything committed to the log so far is projected, however long that takes
   * while the read models move (a node starting far behind, a rebuild of a large log): gives up
   * only when nothing was projected for `stallMs`, or when the projector failed. `onProgress` hears
   * the position every `reportEveryMs` on the way.
   */
  async catchUpWhileMoving(options: CatchUpOptions = {}): Promise<void> {
    const { stallMs = CATCH_UP_STALL_MS, reportEveryMs = 10_000, onProgress } = options;
    const head = await this.store.headPosition();
    let seen = this.#position;
    let movedAt = Date.now();
    while (!(await this.#reached(head, Math.min(reportEveryMs, stallMs)))) {
      if (this.#position > seen) {
        seen = this.#position;
        movedAt = Date.now();
        onProgress?.(seen, head);
      } else if (Date.now() - movedAt >= stallMs) {
        throw new Error(`read models stopped at position ${seen} of ${head}: nothing projected for ${stallMs} ms`);
      }
    }
  }

  /** Called after each committed batch: live consumers (SSE) hang off the projector's tail. */
  onApplied(listener: AppliedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #prepareSchema(): void {
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, position INTEGER NOT NULL)",
    );
    const read = this.db.prepare<[string], { version: number; position: number }>(
      "SELECT version, position FROM projection_checkpoints WHERE name = ?",
    );
    const reset = this.db.prepare(
      "INSERT INTO projection_checkpoints (name, version, position) VALUES (?, ?, 0) ON CONFLICT(name) DO UPDATE SET version = excluded.version, position = 0",
    );
    this.db.transaction(() => {
      for (const projection of this.projections) {
        const row = read.get(projection.name);
        if (!row || row.version !== projection.version) {
          for (const table of projection.tables) this.db.exec(`DROP TABLE IF EXISTS ${table}`);
          reset.run(projection.name, projection.version);
        }
        for (const statement of projection.schema) this.db.exec(statement);
        this.#checkpoints.set(projection.name, row && row.version === projection.version ? row.position : 0);
      }
    })();
  }

  #applyBatch(events: readonly RecordedEvent[]): void {
    if (events.length === 0) return;
    const last = events[events.length - 1].position;
    const save = statement(this.db, "UPDATE projection_checkpoints SET position = ? WHERE name = ?");
    const inbox = this.#sortBatch(events);
    this.db.transaction(() => {
      this.projections.forEach((projection, index) => {
        const checkpoint = this.#checkpoints.get(projection.name) ?? 0;
        if (checkpoint >= last) return;
        const mine = inbox[index][0]?.position > checkpoint ? inbox[index] : inbox[index].filter((event) => event.position > checkpoint);
        if ("applyBatch" in projection) projection.applyBatch(this.db, mine);
        else {
          for (const event of mine) projection.apply(this.db, event);
          projection.afterBatch?.(this.db);
        }
        save.run(last, projection.name);
      });
    })();
    for (const projection of this.projections) {
      this.#checkpoints.set(projection.name, Math.max(last, this.#checkpoints.get(projection.name) ?? 0));
    }
    this.#position = last;
    if (this.#failure !== undefined) {
      log.info({ position: last }, "projector: applying the log again");
      this.#failure = undefined;
      this.#retryMs = 0;
    }
    const ready = this.#waiters.filter((w) => w.position <= last);
    this.#waiters = this.#waiters.filter((w) => w.position > last);
    for (const waiter of ready) waiter.resolve();
    for (const listener of this.#listeners) listener(events);
  }

  /**
   * Each projection's events of the batch, in order, found with one look-up per event rather than
   * one per event and projection (a rebuild of a million events would make thirteen million).
   */
  #sortBatch(events: readonly RecordedEvent[]): RecordedEvent[][] {
    const inbox = this.projections.map((): RecordedEvent[] => []);
    for (const event of events) {
      const readers = this.#readers.get(event.type);
      if (readers === undefined) continue;
      for (const index of readers) inbox[index].push(event);
    }
    return inbox;
  }

  /**
   * A batch (or the log's read) failed: its transaction was rolled back, so the projector reads
   * again from its checkpoints after a pause, doubling up to RETRY_MAX_MS. A transient failure (the
   * file locked past SQLite's busy timeout, a full disk, the log's store unreachable) heals by
   * itself; a lasting one is logged at every attempt. Meanwhile waiters fail at once and the node
   * is not ready (/readyz).
   */
  #failed(error: unknown): void {
    this.#subscription = undefined;
    this.#failure = error;
    this.#retryMs = Math.min(RETRY_MAX_MS, this.#retryMs * 2 || RETRY_FIRST_MS);
    log.error(
      { err: error, position: this.#position, retryInMs: this.#retryMs },
      "projector: reading or applying the log failed; trying again",
    );
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.reject(error);
    if (this.#stopped) return;
    this.#retry = setTimeout(() => {
      if (!this.#stopped) this.#subscribe();
    }, this.#retryMs);
  }
}

/**
 * Events per read and transaction of a rebuild: nobody reads meanwhile, so larger commits than
 * live (500). Not much larger: a page's events live until its commit, and with 10,000 of them the
 * garbage collector copied and promoted enough to make the rebuild ~8 % slower than with 3,000
 * (bench/results/rebuild.md).
 */
const REBUILD_BATCH = 3_000;

/**
 * Drops every read model and replays the whole log into them (operator command and tests). The
 * replay's WAL is copied back into the file once, when the caller closes the connection: nobody
 * reads meanwhile, a page written many times is copied once, and a checkpoint thread copying
 * alongside took a core from the replay (the rebuild ~8 % slower in three alternated pairs,
 * bench/results/rebuild.md). The WAL grows to about the rebuilt models' size until then.
 *
 * From a SQLite log, the log is attached to the connection for the replay, and the types every
 * handling projection can read from it (`readsFromLog`: EventEmitted, most of a log) come without
 * their data: those rows are written by SQL straight from the log.
 */
export async function rebuildProjections(
  store: EventStore,
  db: Database,
  projections: readonly Projection[],
  progress?: CatchUpOptions,
): Promise<number> {
  db.transaction(() => {
    for (const projection of projections) for (const table of projection.tables) db.exec(`DROP TABLE IF EXISTS ${table}`);
    db.exec("DROP TABLE IF EXISTS projection_checkpoints");
  })();
  const fromLog = store.attachableFile === undefined ? new Set<string>() : typesReadFromLog(projections);
  if (fromLog.size > 0) db.prepare(`ATTACH DATABASE ? AS ${ATTACHED_LOG}`).run(store.attachableFile);
  const projector = new Projector(store, db, projections, REBUILD_BATCH, fromLog);
  const autocheckpoint = db.pragma("wal_autocheckpoint", { simple: true }) as number;
  db.pragma("wal_autocheckpoint = 0");
  try {
    projector.start();
    await projector.catchUpWhileMoving(progress);
  } finally {
    await projector.stop();
    if (db.open) {
      db.pragma(`wal_autocheckpoint = ${autocheckpoint}`);
      if (fromLog.size > 0) db.exec(`DETACH DATABASE ${ATTACHED_LOG}`);
    }
  }
  return projector.position;
}

/** The types every projection handling them can read from the attached log (BatchProjection.readsFromLog). */
function typesReadFromLog(projections: readonly Projection[]): Set<string> {
  const types = new Set<string>();
  for (const projection of projections) {
    if ("readsFromLog" in projection) for (const type of projection.readsFromLog ?? []) types.add(type);
  }
  for (const projection of projections) {
    for (const type of projection.handles) {
      if (!("readsFromLog" in projection && projection.readsFromLog?.has(type))) types.delete(type);
    }
  }
  return types;
}
