import type { Database, Statement } from "better-sqlite3";
import type { AllSubscription, EventStore, RecordedEvent } from "../store/eventStore.js";
import { ATTACHED_LOG, type Projection } from "./projection.js";
import { log } from "../observability/log.js";
import { statement } from "../readModels/statements.js";
import { storageFailure } from "../sqliteFailure.js";

type Waiter = { position: number; resolve: () => void; reject: (error: unknown) => void };
export type AppliedListener = (events: readonly RecordedEvent[]) => void;

/** The projector's pauses before reading the log again after a failure: doubled from the first up to the last. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;

/**
 * Failures of the read models' storage rather than of a projection's code: the same batch applies
 * once the file is writable again (SQLite's BUSY, FULL, IOERR, …), so they are retried, never
 * parked. Anything else a projection throws (a TypeError, a constraint) comes back every time.
 */
export function isEnvironmentalFailure(error: unknown): boolean {
  return storageFailure(error) !== undefined;
}

/** An event a projection could not apply, set aside so the read models go on (projection_parked). */
export interface ParkedEvent {
  readonly projection: string;
  readonly position: number;
  readonly event_id: string;
  readonly type: string;
  readonly stream: string;
  readonly error: string;
  readonly parked_at: number;
}

const PARKED_SCHEMA = `CREATE TABLE IF NOT EXISTS projection_parked (
  projection TEXT NOT NULL, position INTEGER NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL, stream TEXT NOT NULL,
  error TEXT NOT NULL, parked_at INTEGER NOT NULL, PRIMARY KEY (projection, position))`;

/** The events parked in a read-model database, oldest first (none when it has no such table yet). */
export function parkedEvents(db: Database): ParkedEvent[] {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'projection_parked'").get();
  if (!exists) return [];
  return db.prepare<[], ParkedEvent>("SELECT * FROM projection_parked ORDER BY position, projection").all();
}

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

  /** Events parked so far in this read-model database (projection_parked). */
  parkedCount(): number {
    return (statement(this.db, "SELECT COUNT(*) AS n FROM projection_parked").get() as { n: number }).n;
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
    this.db.exec(PARKED_SCHEMA);
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
          // Rebuilt from the start: what it parked before is applied again.
          this.db.prepare("DELETE FROM projection_parked WHERE projection = ?").run(projection.name);
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
    const pending = (index: number) => {
      const checkpoint = this.#checkpoints.get(this.projections[index].name) ?? 0;
      return inbox[index][0]?.position > checkpoint ? inbox[index] : inbox[index].filter((event) => event.position > checkpoint);
    };
    try {
      this.db.transaction(() => {
        this.projections.forEach((projection, index) => {
          if ((this.#checkpoints.get(projection.name) ?? 0) >= last) return;
          applyTo(this.db, projection, pending(index));
          save.run(last, projection.name);
        });
      })();
    } catch (error) {
      if (isEnvironmentalFailure(error)) throw error;
      // A projection's code failed on some event of the batch: apply it again event by event, so
      // only what fails alone is parked and everything else (other events, other read models) is
      // applied. Without this one such event stalled every read model, retried forever.
      this.#applyParking(pending, last, save, error);
    }
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
   * The batch again in one transaction, each event applied to each projection in a savepoint of
   * its own: an event a projection throws on alone (other than for a storage failure, which
   * fails the whole batch for a retry) is rolled back for that projection only, recorded in
   * projection_parked and logged, and the rest goes on.
   */
  #applyParking(pending: (index: number) => RecordedEvent[], last: number, save: Statement, batchError: unknown): void {
    const one = this.db.transaction((projection: Projection, event: RecordedEvent) => applyTo(this.db, projection, [event]));
    const park = statement(
      this.db,
      "INSERT OR REPLACE INTO projection_parked (projection, position, event_id, type, stream, error, parked_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    let parked = 0;
    this.db.transaction(() => {
      this.projections.forEach((projection, index) => {
        if ((this.#checkpoints.get(projection.name) ?? 0) >= last) return;
        for (const event of pending(index)) {
          try {
            one(projection, event);
          } catch (error) {
            if (isEnvironmentalFailure(error)) throw error;
            const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
            park.run(projection.name, event.position, event.id, event.type, event.stream, message.slice(0, 2000), Date.now());
            parked++;
            log.error(
              { err: error, projection: projection.name, position: event.position, type: event.type, stream: event.stream },
              "projector: a read model cannot apply this event; it is parked (projection_parked) and the read models go on",
            );
          }
        }
        save.run(last, projection.name);
      });
    })();
    if (parked === 0) log.warn({ err: batchError }, "projector: a batch failed once and applied event by event; nothing parked");
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

/** A projection's events of a batch, applied by its own kind of apply. */
function applyTo(db: Database, projection: Projection, events: readonly RecordedEvent[]): void {
  if ("applyBatch" in projection) projection.applyBatch(db, events);
  else {
    for (const event of events) projection.apply(db, event);
    projection.afterBatch?.(db);
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
    db.exec("DROP TABLE IF EXISTS projection_parked");
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
