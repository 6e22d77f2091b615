import Database from "better-sqlite3";
import type { Database as Connection, Statement } from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { CommitSignal, runAllSubscription } from "../allSubscription.js";
import type {
  AllSubscription,
  AppendOptions,
  AppendResult,
  EventStore,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeToAllOptions,
} from "../eventStore.js";
import { assertExpectedRevision } from "../expectedRevision.js";
import { EventStoreClosedError } from "../eventStoreClosedError.js";
import { GroupCommit, type AppendOutcome, type PendingAppend } from "../groupCommit.js";
import { findReplay, type StoredEventId } from "../idempotency.js";
import { jsonText } from "../proposedEvent.js";
import { prepareDatabase } from "./schema.js";

export interface SqliteEventStoreOptions {
  /** Path of the database file; created with its directory when missing. */
  readonly file: string;
  /** How often to look for commits made by other processes (PRAGMA data_version). */
  readonly foreignCommitPollMs?: number;
}

interface EventRow {
  position: number;
  stream: string;
  revision: number;
  id: string;
  type: string;
  data: string;
  metadata: string;
  created: number;
}

const eventColumns = "position, stream, revision, id, type, data, metadata, created";

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    stream: row.stream,
    revision: row.revision,
    position: row.position,
    created: row.created,
  };
}

// SQLite's "no limit".
const unlimited = -1;

function limitOf(maxCount: number | undefined): number {
  if (maxCount === undefined) return unlimited;
  if (!Number.isSafeInteger(maxCount) || maxCount < 0) throw new RangeError(`invalid maxCount ${maxCount}`);
  return maxCount;
}

export function openSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  mkdirSync(dirname(options.file), { recursive: true });
  const db = new Database(options.file);
  try {
    return new SqliteEventStore(db, options.foreignCommitPollMs ?? 100);
  } catch (error) {
    db.close();
    throw error;
  }
}

class SqliteEventStore implements EventStore {
  private readonly statements: ReturnType<typeof prepareStatements>;
  private readonly signal = new CommitSignal();
  private readonly groupCommit: GroupCommit;
  private readonly appendInSavepoint: (append: PendingAppend, created: number) => AppendResult;
  private readonly subscriptions = new Set<AllSubscription>();
  private foreignCommitPoll: NodeJS.Timeout | undefined;
  private dataVersion = 0;
  private closed = false;

  constructor(
    private readonly db: Connection,
    private readonly foreignCommitPollMs: number,
  ) {
    prepareDatabase(db);
    this.statements = prepareStatements(db);
    // better-sqlite3 runs a nested transaction as SAVEPOINT / ROLLBACK TO, so a failing append
    // leaves the rest of its group untouched.
    this.appendInSavepoint = db.transaction((append: PendingAppend, created: number) => this.appendChecked(append, created));
    const commitGroup = db.transaction((group: readonly PendingAppend[]) => this.commitGroup(group));
    this.groupCommit = new GroupCommit(
      // IMMEDIATE takes the write lock up front, so a group never fails half-way on a lock upgrade.
      (group) => commitGroup.immediate(group),
      () => this.signal.notify(),
    );
  }

  append(stream: string, events: readonly NewEvent[], options?: AppendOptions): Promise<AppendResult> {
    return this.groupCommit.submit(stream, events, options);
  }

  /** Runs inside the group's transaction; each append in its own savepoint. */
  private commitGroup(group: readonly PendingAppend[]): AppendOutcome[] {
    const created = Date.now();
    return group.map((append) => {
      // An I/O error can make SQLite roll the whole transaction back; later appends must not
      // then run in autocommit mode and be committed behind the group's back.
      if (!this.db.inTransaction) throw new Error("the group's transaction was rolled back by SQLite");
      try {
        return { result: this.appendInSavepoint(append, created) };
      } catch (error) {
        return { error };
      }
    });
  }

  private appendChecked(append: PendingAppend, created: number): AppendResult {
    const { stream, events, expectedRevision } = append;
    const { eventById, streamRevision, insertEvent, upsertStream } = this.statements;
    const replay = findReplay(stream, events, (id) => eventById.get(id) as StoredEventId | undefined);
    if (replay !== undefined) return replay;
    const actual = (streamRevision.get(stream) as { revision: number } | undefined)?.revision;
    assertExpectedRevision(stream, expectedRevision, actual);
    let revision = actual ?? -1;
    let position = 0;
    for (const event of events) {
      revision += 1;
      const inserted = insertEvent.run(stream, revision, event.id, event.type, jsonText(event.data), jsonText(event.metadata), created);
      position = Number(inserted.lastInsertRowid);
    }
    upsertStream.run(stream, revision);
    return { nextExpectedRevision: revision, position };
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const limit = limitOf(options?.maxCount);
    const backwards = options?.direction === "backwards";
    const from = options?.fromRevision ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    const statement = backwards ? this.statements.readStreamBackwards : this.statements.readStreamForwards;
    return (statement.all(stream, from, limit) as EventRow[]).map(toRecordedEvent);
  }

  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readAllNow(options?.fromPosition ?? 0, limitOf(options?.maxCount));
  }

  private readAllNow(fromPosition: number, limit: number): RecordedEvent[] {
    return (this.statements.readAll.all(fromPosition, limit) as EventRow[]).map(toRecordedEvent);
  }

  subscribeToAll(options: SubscribeToAllOptions): AllSubscription {
    this.assertOpen();
    const subscription = runAllSubscription(
      options,
      (fromPosition, maxCount) => this.readAllNow(fromPosition, maxCount),
      this.signal,
      (stopped) => {
        this.subscriptions.delete(stopped);
        if (this.subscriptions.size === 0) this.stopForeignCommitPoll();
      },
    );
    this.subscriptions.add(subscription);
    this.startForeignCommitPoll();
    return subscription;
  }

  /**
   * Commits by this store wake subscriptions directly. Commits by another process (an operator
   * CLI on the same file) only show up as a new data_version, so look for that on a slow timer.
   */
  private startForeignCommitPoll(): void {
    if (this.foreignCommitPoll !== undefined) return;
    this.dataVersion = this.db.pragma("data_version", { simple: true }) as number;
    this.foreignCommitPoll = setInterval(() => {
      if (this.closed) return;
      const version = this.db.pragma("data_version", { simple: true }) as number;
      if (version !== this.dataVersion) {
        this.dataVersion = version;
        this.signal.notify();
      }
    }, this.foreignCommitPollMs);
    this.foreignCommitPoll.unref();
  }

  private stopForeignCommitPoll(): void {
    clearInterval(this.foreignCommitPoll);
    this.foreignCommitPoll = undefined;
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    // sqlite_sequence, not max(position): truncating the newest events must not move the head back.
    const row = this.statements.headPosition.get() as { seq: number } | undefined;
    return row?.seq ?? 0;
  }

  async streamRevision(stream: string): Promise<number | undefined> {
    this.assertOpen();
    return (this.statements.streamRevision.get(stream) as { revision: number } | undefined)?.revision;
  }

  async truncateBefore(stream: string, beforeRevision: number): Promise<void> {
    this.assertOpen();
    // A negative bound ("keep the last N" of a short stream) deletes nothing.
    if (!Number.isSafeInteger(beforeRevision)) throw new RangeError(`invalid revision ${beforeRevision}`);
    if (beforeRevision <= 0) return;
    this.statements.truncateBefore.run(stream, beforeRevision);
    this.releaseFreePages();
  }

  /**
   * Freed pages are reused by later appends, which keeps a steady append+truncate load bounded.
   * Only when most of the file is free (a large purge) is space given back to the filesystem.
   */
  private releaseFreePages(): void {
    const free = this.db.pragma("freelist_count", { simple: true }) as number;
    const total = this.db.pragma("page_count", { simple: true }) as number;
    if (free > 1024 && free * 2 > total) this.db.pragma(`incremental_vacuum(${free - Math.floor(total / 4)})`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.groupCommit.close();
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    this.closed = true;
    this.stopForeignCommitPoll();
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }
}

function prepareStatements(db: Connection) {
  const statement = (sql: string): Statement => db.prepare(sql);
  return {
    eventById: statement("SELECT stream, revision, position FROM events WHERE id = ?"),
    streamRevision: statement("SELECT revision FROM streams WHERE stream = ?"),
    insertEvent: statement("INSERT INTO events (stream, revision, id, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)"),
    upsertStream: statement(
      "INSERT INTO streams (stream, revision) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision",
    ),
    readStreamForwards: statement(`SELECT ${eventColumns} FROM events WHERE stream = ? AND revision >= ? ORDER BY revision LIMIT ?`),
    readStreamBackwards: statement(`SELECT ${eventColumns} FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`),
    readAll: statement(`SELECT ${eventColumns} FROM events WHERE position > ? ORDER BY position LIMIT ?`),
    headPosition: statement("SELECT seq FROM sqlite_sequence WHERE name = 'events'"),
    truncateBefore: statement("DELETE FROM events WHERE stream = ? AND revision < ?"),
  };
}
