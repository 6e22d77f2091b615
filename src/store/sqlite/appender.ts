// The write side of the SQLite event store: the statements that append (with the idempotency and
// expected-revision checks) and truncate. It runs on the store's writer thread (writerThread.ts).
import type { Database, Statement } from "better-sqlite3";
import type { AppendResult, ExpectedRevision } from "../eventStore.js";
import { assertExpectedRevision } from "../expectedRevision.js";
import { findReplay, type StoredEventId } from "../idempotency.js";
import type { EncodedError } from "../../sqliteWriter/thread.js";
import { revisionOf, streamRevisionSql } from "./schema.js";
import type { Truncation } from "../truncations.js";

/** An event as it crosses to the writer: data and metadata already JSON text. */
export interface EncodedEvent {
  readonly id: string;
  readonly type: string;
  readonly idGiven: boolean;
  readonly data: string;
  readonly metadata: string;
}

export interface EncodedAppend {
  readonly stream: string;
  readonly events: readonly EncodedEvent[];
  readonly expectedRevision: ExpectedRevision;
}

/**
 * Each append of a group succeeds or fails on its own; errors are encoded to cross threads.
 * `created` is there when the append wrote its events (not a replay of an earlier append).
 */
export type EncodedOutcome = { readonly result: AppendResult; readonly created?: number } | { readonly error: EncodedError };

export class SqliteAppender {
  private readonly statements;
  private readonly appendInSavepoint: (append: EncodedAppend, created: number) => { result: AppendResult; written: boolean };
  private readonly group: (group: readonly EncodedAppend[]) => EncodedOutcome[];
  private readonly truncateInTransaction: (truncations: readonly Truncation[]) => void;

  constructor(
    private readonly db: Database,
    private readonly encodeError: (error: unknown) => EncodedError,
  ) {
    const statement = (sql: string): Statement => db.prepare(sql);
    this.statements = {
      eventById: statement("SELECT stream, revision, position FROM events WHERE id = ?"),
      streamRevision: statement(streamRevisionSql),
      insertEvent: statement("INSERT INTO events (stream, revision, id, type, data, metadata, created) VALUES (?, ?, ?, ?, ?, ?, ?)"),
      // Before a truncation removes the stream's last event: its revision outlives its events.
      keepRevision: statement(
        "INSERT INTO streams (stream, revision) " +
          "SELECT stream, max(revision) FROM events WHERE stream = ? GROUP BY stream HAVING max(revision) < ? " +
          "ON CONFLICT (stream) DO UPDATE SET revision = max(streams.revision, excluded.revision)",
      ),
      truncateBefore: statement("DELETE FROM events WHERE stream = ? AND revision < ?"),
    };
    this.truncateInTransaction = db.transaction((truncations: readonly Truncation[]) => {
      for (const { stream, beforeRevision } of truncations) {
        this.statements.keepRevision.run(stream, beforeRevision);
        this.statements.truncateBefore.run(stream, beforeRevision);
      }
    });
    // better-sqlite3 runs a nested transaction as SAVEPOINT / ROLLBACK TO, so a failing append
    // leaves the rest of its group untouched.
    this.appendInSavepoint = db.transaction((append: EncodedAppend, created: number) => this.appendChecked(append, created));
    const group = db.transaction((appends: readonly EncodedAppend[]) => this.commitGroup(appends));
    // IMMEDIATE takes the write lock up front, so a group never fails half-way on a lock upgrade.
    this.group = (appends) => group.immediate(appends);
  }

  /** One transaction for the group; throws only when the whole transaction failed. */
  commit(group: readonly EncodedAppend[]): EncodedOutcome[] {
    return this.group(group);
  }

  /** Several truncations in one transaction: one commit (and fsync) however many streams. */
  truncate(truncations: readonly Truncation[]): void {
    this.truncateInTransaction(truncations);
    this.releaseFreePages();
  }

  private commitGroup(group: readonly EncodedAppend[]): EncodedOutcome[] {
    const created = Date.now();
    return group.map((append) => {
      // An I/O error can make SQLite roll the whole transaction back; later appends must not
      // then run in autocommit mode and be committed behind the group's back.
      if (!this.db.inTransaction) throw new Error("the group's transaction was rolled back by SQLite");
      try {
        const { result, written } = this.appendInSavepoint(append, created);
        return written ? { result, created } : { result };
      } catch (error) {
        return { error: this.encodeError(error) };
      }
    });
  }

  private appendChecked(append: EncodedAppend, created: number): { result: AppendResult; written: boolean } {
    const { stream, events, expectedRevision } = append;
    const { eventById, streamRevision, insertEvent } = this.statements;
    const replay = findReplay(stream, events, (id) => eventById.get(id) as StoredEventId | undefined);
    if (replay !== undefined) return { result: replay, written: false };
    const actual = revisionOf(streamRevision.get(stream, stream));
    assertExpectedRevision(stream, expectedRevision, actual);
    let revision = actual ?? -1;
    let position = 0;
    for (const event of events) {
      revision += 1;
      const inserted = insertEvent.run(stream, revision, event.id, event.type, event.data, event.metadata, created);
      position = Number(inserted.lastInsertRowid);
    }
    return { result: { nextExpectedRevision: revision, position }, written: events.length > 0 };
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
}
