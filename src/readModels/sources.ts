import type { Database } from "better-sqlite3";
import { countOf, keysetPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";
import { parseEventId } from "../runner/eventIds.js";

export interface SourceRow {
  id: string;
  owner_id: string;
  creator_id: string;
  component_id: string;
  name: string;
  name_slug: string;
  endpoint_id: string;
  configured_props: string;
  active: number;
  created_at: number;
  updated_at: number;
  seq: number;
}

export interface ComponentRow {
  id: string;
  owner_id: string;
  key: string | null;
  name: string;
  version: string;
  type: string;
  description: string | null;
  code: string;
  code_hash: string;
  url: string | null;
  configurable_props: string;
  meta: string;
  created_at: number;
  seq: number;
}

export interface EmittedEventRow {
  emitter_id: string;
  id: string;
  channel: string;
  event: string;
  summary: string | null;
  emit_id: string | null;
  ts: number | null;
  indexed_at_ms: number;
  invocation_id: string;
  seq: number;
}

export interface RunLogRow {
  source_id: string;
  invocation_id: string;
  trigger: string;
  started_ms: number;
  ended_ms: number;
  compute_ms: number;
  ok: number;
  error: string | null;
  lines: string;
  seq: number;
}

/** Queries over the components, sources, emitted_events and source_logs read models. */
export class SourcesReadModel {
  constructor(private readonly db: Database) {}

  source(id: string): SourceRow | undefined {
    return statement<[string], SourceRow>(this.db, "SELECT * FROM sources WHERE id = ?").get(id);
  }

  sourceByEndpoint(endpointId: string): SourceRow | undefined {
    return statement<[string], SourceRow>(this.db, "SELECT * FROM sources WHERE endpoint_id = ?").get(endpointId);
  }

  sourcesOf(ownerId: string, page: PageRequest): Page<SourceRow> {
    return keysetPage<SourceRow>(this.db, {
      from: "sources", where: "owner_id = ?", params: [ownerId], order: "asc", total: countOf(this.db, "source_counts", ownerId),
    }, page);
  }

  /** Every active source with a timer prop value, for the scheduler. */
  activeSources(): SourceRow[] {
    return statement<[], SourceRow>(this.db, "SELECT * FROM sources WHERE active = 1").all();
  }

  slugTaken(ownerId: string, slug: string): boolean {
    return statement(this.db, "SELECT 1 FROM sources WHERE owner_id = ? AND name_slug = ?").get(ownerId, slug) !== undefined;
  }

  component(id: string): ComponentRow | undefined {
    return statement<[string], ComponentRow>(this.db, "SELECT * FROM components WHERE id = ?").get(id);
  }

  componentByKey(ownerId: string, key: string): ComponentRow | undefined {
    return statement<[string, string], ComponentRow>(this.db,
        "SELECT c.* FROM component_keys k JOIN components c ON c.id = k.component_id WHERE k.owner_id = ? AND k.key = ?",
      )
      .get(ownerId, key);
  }

  componentByHash(ownerId: string, codeHash: string, url: string | null): ComponentRow | undefined {
    return statement<[string, string, string | null], ComponentRow>(this.db,
        "SELECT * FROM components WHERE owner_id = ? AND code_hash = ? AND url IS ? ORDER BY seq DESC LIMIT 1",
      )
      .get(ownerId, codeHash, url);
  }

  /** The newest 100 events of an emitter that are not deleted, newest first, optionally one channel. */
  events(emitterId: string, page: PageRequest, channel?: string): Page<EmittedEventRow> {
    const where = channel === undefined ? "emitter_id = ? AND deleted = 0" : "emitter_id = ? AND deleted = 0 AND channel = ?";
    const params = channel === undefined ? [emitterId] : [emitterId, channel];
    const total = statement<unknown[], { n: number }>(this.db, `SELECT COUNT(*) AS n FROM emitted_events WHERE ${where}`)
      .get(...params)!.n;
    return keysetPage<EmittedEventRow>(this.db, { from: "emitted_events", where, params, order: "desc", total }, page);
  }

  /** Kept events after a log position, oldest first, optionally one channel: SSE catch-up. */
  eventsAfter(emitterId: string, afterSeq: number, channel: string | undefined, limit: number): EmittedEventRow[] {
    const byChannel = channel === undefined ? "" : " AND channel = ?";
    const params: unknown[] = channel === undefined ? [emitterId, afterSeq, limit] : [emitterId, afterSeq, channel, limit];
    return statement<unknown[], EmittedEventRow>(this.db,
        `SELECT * FROM emitted_events WHERE emitter_id = ? AND deleted = 0 AND seq > ?${byChannel} ORDER BY seq ASC LIMIT ?`,
      )
      .all(...params);
  }

  /**
   * The log position an SSE client that last saw `eventId` has read up to: event ids increase per
   * emitter, so an id no longer kept (or never issued) still finds its place; unreadable ids: 0.
   */
  eventCursor(emitterId: string, eventId: string): number {
    const id = parseEventId(eventId);
    if (!id) return 0;
    return statement<[string, number, number, number], { seq: number }>(this.db,
        "SELECT COALESCE(MAX(seq), 0) AS seq FROM emitted_events WHERE emitter_id = ? AND (ms < ? OR (ms = ? AND n <= ?))",
      )
      .get(emitterId, id.ms, id.ms, id.seq)!.seq;
  }

  /** Kept run logs after a log position, oldest first: $logs SSE catch-up. */
  logsAfter(sourceId: string, afterSeq: number, limit: number): RunLogRow[] {
    return statement<[string, number, number], RunLogRow>(this.db, "SELECT * FROM source_logs WHERE source_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?")
      .all(sourceId, afterSeq, limit);
  }

  /** The log position of a kept run; 0 (every kept run follows) when it is no longer kept. */
  logCursor(sourceId: string, invocationId: string): number {
    return statement<[string, string], { seq: number }>(this.db, "SELECT seq FROM source_logs WHERE source_id = ? AND invocation_id = ?")
      .get(sourceId, invocationId)?.seq ?? 0;
  }

  /** The oldest kept event's stream revision: log retention may truncate before it. */
  oldestKeptRevision(emitterId: string): { revision: number; count: number } | undefined {
    return statement<[string], { revision: number; count: number }>(this.db,
        "SELECT MIN(stream_revision) AS revision, COUNT(*) AS count FROM emitted_events WHERE emitter_id = ? HAVING COUNT(*) > 0",
      )
      .get(emitterId);
  }

  oldestKeptLogRevision(sourceId: string): { revision: number; count: number } | undefined {
    return statement<[string], { revision: number; count: number }>(this.db,
        "SELECT MIN(stream_revision) AS revision, COUNT(*) AS count FROM source_logs WHERE source_id = ? HAVING COUNT(*) > 0",
      )
      .get(sourceId);
  }

  logs(sourceId: string, page: PageRequest): Page<RunLogRow> {
    const total = statement<[string], { n: number }>(this.db, "SELECT COUNT(*) AS n FROM source_logs WHERE source_id = ?").get(sourceId)!.n;
    return keysetPage<RunLogRow>(this.db, { from: "source_logs", where: "source_id = ?", params: [sourceId], order: "desc", total }, page);
  }
}
