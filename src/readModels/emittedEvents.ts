import type { Database } from "better-sqlite3";
import type { EmittedEventRow } from "../../projections/emittedEvents.js";
import { parseEventId } from "../../commands/emitters/eventIds.js";
import { keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";

/** An emitted event as listings and streams show it. */
export interface EmittedEvent {
  readonly emitterId: string;
  /** "<epoch ms>-<seq>", increasing per emitter. */
  readonly id: string;
  /** "" for the default channel. */
  readonly channel: string;
  readonly event: unknown;
  /** Size of the event's JSON text (listings shorten events over 1 KB). */
  readonly eventBytes: number;
  readonly summary: string | null;
  readonly emitId: string | null;
  readonly ts: number | null;
  readonly indexedAtMs: number;
  readonly invocationId: string;
  /** Log position: the keyset of listings and streams. */
  readonly seq: number;
}

export const toEmittedEvent = (row: EmittedEventRow): EmittedEvent => ({
  emitterId: row.emitter_id,
  id: row.id,
  channel: row.channel,
  event: JSON.parse(row.event),
  eventBytes: Buffer.byteLength(row.event, "utf8"),
  summary: row.summary,
  emitId: row.emit_id,
  ts: row.ts,
  indexedAtMs: row.indexed_at_ms,
  invocationId: row.invocation_id,
  seq: row.seq,
});

/** Queries over the emitted events read model (projections/emittedEvents.ts): the newest 100 per emitter. */
export class EmittedEventsReadModel {
  constructor(private readonly db: Database) {}

  /** Kept events that are not deleted, newest first, optionally of one channel. */
  /** An emitter's kept events, newest first: every channel, one `channel`, or every channel but `except` (a workflow's emits without its $errors). */
  events(emitterId: string, page: PageRequest, channel?: string, except?: string): Page<EmittedEvent> {
    let where = "emitter_id = ? AND deleted = 0";
    const params: string[] = [emitterId];
    if (channel !== undefined) {
      where += " AND channel = ?";
      params.push(channel);
    } else if (except !== undefined) {
      where += " AND channel <> ?";
      params.push(except);
    }
    // At most 100 rows per emitter are kept, so counting them stays cheap.
    const total = statement<unknown[], { n: number }>(this.db, `SELECT COUNT(*) AS n FROM emitted_events WHERE ${where}`).get(...params)!.n;
    return mapPage(
      keysetPage<EmittedEventRow>(this.db, { from: "emitted_events", where, params, order: "desc", total }, page),
      toEmittedEvent,
    );
  }

  /** One kept event (deleted ones too: a re-send may still want it). */
  event(emitterId: string, id: string): EmittedEvent | undefined {
    const row = statement<[string, string], EmittedEventRow>(this.db, "SELECT * FROM emitted_events WHERE emitter_id = ? AND id = ?").get(
      emitterId,
      id,
    );
    return row && toEmittedEvent(row);
  }

  /** Kept events after a log position, oldest first, optionally one channel: SSE catch-up. */
  /** The kept events one invocation emitted, in order (what a lost reply would have said). */
  emittedBy(emitterId: string, invocationId: string): { id: string; channel: string }[] {
    return statement<[string, string], { id: string; channel: string }>(
      this.db,
      "SELECT id, channel FROM emitted_events WHERE emitter_id = ? AND invocation_id = ? ORDER BY seq",
    ).all(emitterId, invocationId);
  }

  eventsAfter(emitterId: string, afterSeq: number, channel: string | undefined, limit: number): EmittedEvent[] {
    const byChannel = channel === undefined ? "" : " AND channel = ?";
    const params: unknown[] = channel === undefined ? [emitterId, afterSeq, limit] : [emitterId, afterSeq, channel, limit];
    return statement<unknown[], EmittedEventRow>(
      this.db,
      `SELECT * FROM emitted_events WHERE emitter_id = ? AND deleted = 0 AND seq > ?${byChannel} ORDER BY seq ASC LIMIT ?`,
    )
      .all(...params)
      .map(toEmittedEvent);
  }

  /**
   * The log position an SSE client that last saw `eventId` has read up to: event ids increase per
   * emitter, so an id no longer kept (or never issued) still finds its place; unreadable ids: 0.
   */
  cursorOf(emitterId: string, eventId: string): number {
    const id = parseEventId(eventId);
    if (!id) return 0;
    return statement<[string, number, number, number], { seq: number }>(
      this.db,
      "SELECT COALESCE(MAX(seq), 0) AS seq FROM emitted_events WHERE emitter_id = ? AND (ms < ? OR (ms = ? AND n <= ?))",
    ).get(emitterId, id.ms, id.ms, id.seq)!.seq;
  }

  /** Emitters whose window is full: the only ones whose log may hold more than the window. */
  fullEmitters(window: number): string[] {
    return statement<[number], { emitter_id: string }>(
      this.db,
      "SELECT emitter_id FROM emitted_events GROUP BY emitter_id HAVING COUNT(*) >= ?",
    )
      .all(window)
      .map((r) => r.emitter_id);
  }

  /** The oldest kept event's stream revision: log retention may truncate before it. */
  oldestKeptRevision(emitterId: string): { revision: number; count: number } | undefined {
    return statement<[string], { revision: number; count: number }>(
      this.db,
      "SELECT MIN(stream_revision) AS revision, COUNT(*) AS count FROM emitted_events WHERE emitter_id = ? HAVING COUNT(*) > 0",
    ).get(emitterId);
  }
}
