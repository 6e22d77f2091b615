import Database from "better-sqlite3";
import { deepFreeze } from "../../json/freeze.js";
import type { Database as Connection, Statement } from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { CommitSignal, batchSizeOf, runAllSubscription } from "../allSubscription.js";
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
import { EventStoreClosedError } from "../eventStoreClosedError.js";
import { GroupCommit, type AppendOutcome, type PendingAppend } from "../groupCommit.js";
import { groupedTruncations, type Truncation } from "../truncations.js";
import type { GroupedWrites } from "../../groupedWrites.js";
import { jsonText } from "../proposedEvent.js";
import type { EncodedAppend, EncodedOutcome } from "./appender.js";
import { decodeError } from "./errorCodec.js";
import { WriterThread } from "../../sqliteWriter/thread.js";
import type { StoreWrite } from "./writerThread.js";
import { prepareDatabase, revisionOf, streamRevisionSql } from "./schema.js";
import { RecentEvents } from "./recentEvents.js";
import { eventColumns, readAllSql, toRecordedEvent, type EventRow } from "./eventRows.js";
import { ReadAhead } from "./readAhead.js";
import { log } from "../../observability/log.js";

export interface SqliteEventStoreOptions {
  /** Path of the database file; created with its directory when missing. */
  readonly file: string;
  /** How often to look for commits made by other processes (PRAGMA data_version). */
  readonly foreignCommitPollMs?: number;
  /** A subscription starting at least this many events behind the head reads them on a thread of its own (ReadAhead). */
  readonly readAheadFrom?: number;
}

/**
 * A catch-up this long (a rebuild, a node starting far behind) reads the log on another thread:
 * the thread's start (~30 ms) is paid back within a few thousand events.
 */
export const READ_AHEAD_FROM = 20_000;

// SQLite's "no limit".
const unlimited = -1;

function limitOf(maxCount: number | undefined): number {
  if (maxCount === undefined) return unlimited;
  if (!Number.isSafeInteger(maxCount) || maxCount < 0) throw new RangeError(`invalid maxCount ${maxCount}`);
  return maxCount;
}

/** An append as the writer thread takes it: data and metadata as JSON text. */
function encodeAppend(append: PendingAppend): EncodedAppend {
  return {
    stream: append.stream,
    expectedRevision: append.expectedRevision,
    events: append.events.map((event) => ({
      id: event.id,
      type: event.type,
      idGiven: event.idGiven,
      data: jsonText(event.data),
      metadata: jsonText(event.metadata),
    })),
  };
}

export function openSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  mkdirSync(dirname(options.file), { recursive: true });
  const db = new Database(options.file);
  try {
    return new SqliteEventStore(db, options.file, options.foreignCommitPollMs ?? 100, options.readAheadFrom ?? READ_AHEAD_FROM);
  } catch (error) {
    db.close();
    throw error;
  }
}

class SqliteEventStore implements EventStore {
  private readonly statements: ReturnType<typeof prepareStatements>;
  private readonly signal = new CommitSignal();
  private readonly groupCommit: GroupCommit;
  /** A retention sweep's truncations: one transaction on the writer thread (see groupedTruncations). */
  private readonly truncations: GroupedWrites<Truncation, void>;
  /** Commits run on a thread of their own: the event loop only waits for "durable". */
  private readonly writer: WriterThread<StoreWrite>;
  private readonly subscriptions = new Set<AllSubscription>();
  /** What this store committed last, for the live tails of its subscriptions. */
  private readonly recent = new RecentEvents();
  private foreignCommitPoll: NodeJS.Timeout | undefined;
  private dataVersion = 0;
  private closed = false;

  constructor(
    private readonly db: Connection,
    private readonly file: string,
    private readonly foreignCommitPollMs: number,
    private readonly readAheadFrom: number,
  ) {
    prepareDatabase(db);
    this.statements = prepareStatements(db);
    this.writer = new WriterThread<StoreWrite>(new URL("./writerThread.js", import.meta.url), { file }, decodeError);
    this.truncations = groupedTruncations((truncations) => this.writer.request({ op: "truncate", truncations }));
    this.groupCommit = new GroupCommit(
      (group) => this.commitGroup(group),
      () => {
        this.ownCommitSeen();
        this.signal.notify();
      },
    );
  }

  append(stream: string, events: readonly NewEvent[], options?: AppendOptions): Promise<AppendResult> {
    return this.groupCommit.submit(stream, events, options);
  }

  /** Encodes the group here (an event JSON cannot carry fails alone), commits it on the writer thread. */
  private async commitGroup(group: readonly PendingAppend[]): Promise<AppendOutcome[]> {
    const outcomes: AppendOutcome[] = new Array<AppendOutcome>(group.length);
    const encoded: EncodedAppend[] = [];
    const slots: number[] = [];
    group.forEach((append, index) => {
      try {
        encoded.push(encodeAppend(append));
        slots.push(index);
      } catch (error) {
        outcomes[index] = { error };
      }
    });
    if (encoded.length > 0) {
      const committed = (await this.writer.request({ op: "commit", group: encoded })) as EncodedOutcome[];
      committed.forEach((outcome, k) => {
        if (!("result" in outcome)) {
          outcomes[slots[k]] = { error: decodeError(outcome.error) };
          return;
        }
        outcomes[slots[k]] = { result: outcome.result };
        if (outcome.created !== undefined && this.subscriptions.size > 0) this.keepRecent(encoded[k], outcome.result, outcome.created);
      });
    }
    return outcomes;
  }

  /** The events of a written append as a read of the file would give them, for the subscriptions' tails. */
  private keepRecent(append: EncodedAppend, result: AppendResult, created: number): void {
    const count = append.events.length;
    append.events.forEach((event, index) => {
      this.recent.add(
        deepFreeze({
          id: event.id,
          type: event.type,
          data: JSON.parse(event.data) as unknown,
          metadata: JSON.parse(event.metadata) as Record<string, unknown>,
          stream: append.stream,
          revision: result.nextExpectedRevision - count + 1 + index,
          position: result.position - count + 1 + index,
          created,
        }),
        event.data.length + event.metadata.length,
      );
    });
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
    return this.readFile(options?.fromPosition ?? 0, limitOf(options?.maxCount));
  }

  private readFile(fromPosition: number, limit: number): RecordedEvent[] {
    return (this.statements.readAll.all(fromPosition, limit) as EventRow[]).map(toRecordedEvent);
  }

  /** A subscription's read: its live tail shares the recent events (frozen) with the other subscriptions. */
  private readTail(fromPosition: number, limit: number): RecordedEvent[] {
    // The window answers only when nothing was committed after it (by another process, or by this
    // one a moment ago): otherwise a short read would pass as "caught up".
    const recent = this.recent.last === this.headNow() ? this.recent.read(fromPosition, limit) : undefined;
    return recent ?? this.readFile(fromPosition, limit);
  }

  /** A reader on another thread when the subscription starts far enough behind (not for an in-memory log). */
  private readAheadFor(options: SubscribeToAllOptions): ReadAhead | undefined {
    if (this.db.memory || this.headNow() - options.fromPosition < this.readAheadFrom) return undefined;
    return new ReadAhead(this.file, options.fromPosition, batchSizeOf(options), options.leaveDataOf);
  }

  /** The file, unless the log is in memory. */
  get attachableFile(): string | undefined {
    return this.db.memory ? undefined : this.file;
  }

  private headNow(): number {
    return (this.statements.headPosition.get() as { seq: number } | undefined)?.seq ?? 0;
  }

  subscribeToAll(options: SubscribeToAllOptions): AllSubscription {
    this.assertOpen();
    let ahead = this.readAheadFor(options);
    const leaveReadAhead = () => {
      void ahead?.close();
      ahead = undefined;
    };
    const catchUp = async (from: ReadAhead, fromPosition: number, maxCount: number): Promise<RecordedEvent[]> => {
      try {
        const events = await from.next(fromPosition);
        if (events.length === maxCount) return events;
        // The head: the rest is read here, after the subscription took its commit signal, so a
        // commit made since the thread's read still wakes it.
        leaveReadAhead();
        const last = events.length > 0 ? events[events.length - 1].position : fromPosition;
        return events.length > 0 ? events.concat(this.readTail(last, maxCount - events.length)) : this.readTail(fromPosition, maxCount);
      } catch (error) {
        if (this.closed) throw error;
        log.warn({ err: error }, "event log: the catch-up read thread failed; reading on the event loop instead");
        leaveReadAhead();
        return this.readTail(fromPosition, maxCount);
      }
    };
    // The live tail's read stays synchronous: no extra turn per commit.
    const read = (fromPosition: number, maxCount: number) =>
      ahead === undefined ? this.readTail(fromPosition, maxCount) : catchUp(ahead, fromPosition, maxCount);
    const subscription = runAllSubscription(options, read, this.signal, (stopped) => {
      leaveReadAhead();
      this.subscriptions.delete(stopped);
      if (this.subscriptions.size === 0) this.stopForeignCommitPoll();
    });
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
    this.dataVersion = this.readDataVersion();
    this.foreignCommitPoll = setInterval(() => {
      if (this.closed) return;
      const version = this.readDataVersion();
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
    return this.headNow();
  }

  async streamRevision(stream: string): Promise<number | undefined> {
    this.assertOpen();
    return revisionOf(this.statements.streamRevision.get(stream, stream));
  }

  /** In process, point lookups on the prepared statement cost what one `IN` query would: one call, no round trips. */
  async streamRevisions(streams: readonly string[]): Promise<(number | undefined)[]> {
    this.assertOpen();
    return streams.map((stream) => revisionOf(this.statements.streamRevision.get(stream, stream)));
  }

  async truncateBefore(stream: string, beforeRevision: number): Promise<void> {
    this.assertOpen();
    // A negative bound ("keep the last N" of a short stream) deletes nothing.
    if (!Number.isSafeInteger(beforeRevision)) throw new RangeError(`invalid revision ${beforeRevision}`);
    if (beforeRevision <= 0) return;
    this.recent.truncated(stream, beforeRevision);
    await this.truncations.add({ stream, beforeRevision });
  }

  /**
   * The writer thread's connection is "another connection" to data_version: an append group's
   * commit is taken as seen, so the poll wakes subscriptions only for other processes' commits
   * (one of theirs made before this point is read by the wake-up that follows right after). Not
   * after a truncation: no wake-up follows it.
   */
  private ownCommitSeen(): void {
    if (this.foreignCommitPoll !== undefined && !this.closed) this.dataVersion = this.readDataVersion();
  }

  /** Prepared once: `db.pragma()` prepares its statement on every call, and this runs after every commit group. */
  #dataVersion: Statement<[], number> | undefined;
  private readDataVersion(): number {
    this.#dataVersion ??= this.db.prepare<[], number>("PRAGMA data_version").pluck();
    return this.#dataVersion.get()!;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.groupCommit.close();
    await this.truncations.close();
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    this.closed = true;
    this.stopForeignCommitPoll();
    await this.writer.close();
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }
}

function prepareStatements(db: Connection) {
  const statement = (sql: string): Statement => db.prepare(sql);
  // Rows as arrays: better-sqlite3 builds an object per row otherwise, a third of a large read.
  const rows = (sql: string): Statement => db.prepare(sql).raw(true);
  return {
    streamRevision: statement(streamRevisionSql),
    readStreamForwards: rows(`SELECT ${eventColumns} FROM events WHERE stream = ? AND revision >= ? ORDER BY revision LIMIT ?`),
    readStreamBackwards: rows(`SELECT ${eventColumns} FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`),
    readAll: rows(readAllSql),
    headPosition: statement("SELECT seq FROM sqlite_sequence WHERE name = 'events'"),
  };
}
