import type { Database } from "better-sqlite3";
import { ATTACHED_LOG, type BatchProjection } from "../src/projector/projection.js";
import type { SourceDeleted } from "../commands/sources/source.js";
import type { WorkflowDeleted } from "../commands/workflows/workflow.js";
import type { EventEmitted, EventsDeleted } from "../commands/emitters/emitter.js";
import { dataLeftInLog, type RecordedEvent } from "../src/store/eventStore.js";
import { parseEventId } from "../commands/emitters/eventIds.js";
import { statement } from "../src/readModels/statements.js";
import { KeptWindow } from "./keptWindow.js";
import { MultiRowInsert } from "./multiRowInsert.js";

/** A row of `emitted_events`: event is its JSON text. */
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

/** Events kept and listable per emitter (the seed's "last 100"). */
export const KEPT_EVENTS = 100;

/** The row an EventEmitted becomes; SSE builds its live frames from it too, so both shapes agree. */
export function emittedEventRow(recorded: RecordedEvent): EmittedEventRow {
  const d = recorded.data as EventEmitted["data"];
  return {
    emitter_id: d.emitterId,
    id: d.id,
    channel: d.channel,
    event: JSON.stringify(d.event),
    summary: d.summary,
    emit_id: d.emitId ?? d.id,
    ts: d.ts,
    indexed_at_ms: d.indexedAtMs,
    invocation_id: d.invocationId,
    seq: recorded.position,
  };
}

const insertEmitted = new MultiRowInsert(
  `INSERT OR IGNORE INTO emitted_events (emitter_id, id, ms, n, channel, event, summary, emit_id, ts, indexed_at_ms,
    invocation_id, seq, stream_revision)`,
  13,
);

/**
 * `insertEmitted`'s rows written by SQLite from the attached log: the EventEmitted of a range of
 * positions (first and last inclusive), each column what `emittedEventRow` and `applyBatch` make
 * of the event in JavaScript (the rebuild tests compare the two, row for row, on events of every
 * shape). `->` gives a value's JSON text as stored, which is `JSON.stringify`'s (the log's data
 * is written by it), and `->>` a string's or number's value. An id is "<ms>-<n>": a CAST to
 * INTEGER takes the longest integer its text starts with, the ms (cheaper than cutting it out).
 */
const insertEmittedFromLog = `INSERT OR IGNORE INTO emitted_events (emitter_id, id, ms, n, channel, event, summary, emit_id, ts,
    indexed_at_ms, invocation_id, seq, stream_revision)
  SELECT data ->> '$.emitterId', id, CAST(id AS INTEGER), CAST(substr(id, instr(id, '-') + 1) AS INTEGER), data ->> '$.channel', data -> '$.event', data ->> '$.summary',
    coalesce(data ->> '$.emitId', id), data ->> '$.ts', data ->> '$.indexedAtMs', data ->> '$.invocationId', position, revision
  FROM (SELECT data, data ->> '$.id' AS id, position, revision FROM ${ATTACHED_LOG}.events
        WHERE position BETWEEN ? AND ? AND type = 'EventEmitted')`;

// The window is the newest 100 EventEmitted of the emitter, deleted or not, which is exactly what
// log retention keeps: a rebuild from the truncated log gives the same rows.
export const emittedEventsProjection: BatchProjection = {
  name: "emitted_events",
  // 2: emit_id is the event's id when the emit gave none. 3: the row's key is its log position
  // (`seq`, the rowid) and the one index is (emitter_id, seq); (emitter_id, id) is no longer a
  // second index of its own (docs/decisions.md, "emitted_events: one index").
  version: 3,
  tables: ["emitted_events"],
  schema: [
    `CREATE TABLE IF NOT EXISTS emitted_events (
      emitter_id TEXT NOT NULL, id TEXT NOT NULL, ms INTEGER NOT NULL, n INTEGER NOT NULL, channel TEXT NOT NULL,
      event TEXT NOT NULL, summary TEXT, emit_id TEXT, ts INTEGER, indexed_at_ms INTEGER NOT NULL,
      invocation_id TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0, seq INTEGER PRIMARY KEY, stream_revision INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS emitted_events_by_emitter ON emitted_events (emitter_id, seq)",
  ],
  handles: new Set(["EventEmitted", "EventsDeleted", "SourceDeleted", "WorkflowDeleted"]),
  readsFromLog: new Set(["EventEmitted"]),
  applyBatch(db, events) {
    const inserts = insertEmitted.into(db);
    const kept = new KeptWindow("emitted_events", "emitter_id", KEPT_EVENTS);
    // A run of events left in the log (positions), written by one statement when it ends: at the
    // next event of another kind and at the batch's end. Rows are written in log order.
    let leftFirst = 0;
    let leftLast = 0;
    const writeLeft = () => {
      if (leftFirst === 0) return;
      inserts.flush();
      statement(db, insertEmittedFromLog).run(leftFirst, leftLast);
      const emitters = statement(db, "SELECT DISTINCT emitter_id FROM emitted_events WHERE seq BETWEEN ? AND ?");
      for (const emitter of emitters.pluck().all(leftFirst, leftLast) as string[]) kept.touch(emitter);
      leftFirst = 0;
    };
    for (const recorded of events) {
      if (recorded.type === "EventEmitted" && dataLeftInLog(recorded)) {
        if (leftFirst === 0) leftFirst = recorded.position;
        leftLast = recorded.position;
        continue;
      }
      writeLeft();
      switch (recorded.type) {
        case "EventEmitted": {
          const row = emittedEventRow(recorded);
          const id = parseEventId(row.id)!;
          inserts.add([
            row.emitter_id,
            row.id,
            id.ms,
            id.seq,
            row.channel,
            row.event,
            row.summary,
            row.emit_id,
            row.ts,
            row.indexed_at_ms,
            row.invocation_id,
            row.seq,
            recorded.revision,
          ]);
          kept.touch(row.emitter_id);
          break;
        }
        case "EventsDeleted": {
          const d = recorded.data as EventsDeleted["data"];
          inserts.flush();
          markDeleted(db, d.emitterId, d.startId, d.endId);
          break;
        }
        case "SourceDeleted":
        case "WorkflowDeleted":
          inserts.flush();
          statement(db, "DELETE FROM emitted_events WHERE emitter_id = ?").run(
            (recorded.data as SourceDeleted["data"] | WorkflowDeleted["data"]).id,
          );
          break;
      }
    }
    writeLeft();
    inserts.flush();
    kept.trim(db);
  },
};

/** The seed's DELETE rules: neither id = all; start only = it and later; end only = it and earlier; both = inclusive range. */
function markDeleted(db: Database, emitterId: string, startId: string | null, endId: string | null): void {
  const start = startId ? parseEventId(startId) : undefined;
  const end = endId ? parseEventId(endId) : undefined;
  const conditions = ["emitter_id = ?"];
  const params: unknown[] = [emitterId];
  if (start) {
    conditions.push("(ms > ? OR (ms = ? AND n >= ?))");
    params.push(start.ms, start.ms, start.seq);
  }
  if (end) {
    conditions.push("(ms < ? OR (ms = ? AND n <= ?))");
    params.push(end.ms, end.ms, end.seq);
  }
  statement(db, `UPDATE emitted_events SET deleted = 1 WHERE ${conditions.join(" AND ")}`).run(...params);
}
