import type { Projection } from "../src/projector/projection.js";
import type { RunLogged } from "../commands/runLogs/runLog.js";
import type { SourceDeleted } from "../commands/sources/source.js";
import { statement } from "../src/readModels/statements.js";
import { KeptWindow } from "./keptWindow.js";
import type { RecordedEvent } from "../src/store/eventStore.js";

export const KEPT_RUN_LOGS = 100;

/** A row of `source_logs`: error and lines are JSON. */
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

/** The row a RunLogged becomes; SSE builds its live $logs frames from it too. */
export function runLogRow(recorded: RecordedEvent): RunLogRow {
  const d = recorded.data as RunLogged["data"];
  return {
    source_id: d.sourceId,
    invocation_id: d.invocationId,
    trigger: d.trigger,
    started_ms: d.startedMs,
    ended_ms: d.endedMs,
    compute_ms: Math.round(d.computeMs),
    ok: d.ok ? 1 : 0,
    error: d.error ? JSON.stringify(d.error) : null,
    lines: JSON.stringify(d.lines),
    seq: recorded.position,
  };
}

export const runLogsProjection: Projection = {
  name: "source_logs",
  // 3: the row keyed by its log position (`seq`, the rowid) and one index, the unique
  // (source_id, invocation_id), whose entries carry the rowid: a source's rows in log order are
  // its at most 100 entries sorted (docs/decisions.md, "source_logs: one index").
  version: 3,
  tables: ["source_logs"],
  schema: [
    `CREATE TABLE IF NOT EXISTS source_logs (
      source_id TEXT NOT NULL, invocation_id TEXT NOT NULL, trigger TEXT NOT NULL, started_ms INTEGER NOT NULL,
      ended_ms INTEGER NOT NULL, compute_ms INTEGER NOT NULL, ok INTEGER NOT NULL, error TEXT, lines TEXT NOT NULL,
      seq INTEGER PRIMARY KEY, stream_revision INTEGER NOT NULL, UNIQUE (source_id, invocation_id))`,
  ],
  handles: new Set(["RunLogged", "SourceDeleted", "WorkflowDeleted"]),
  apply(db, recorded) {
    if (recorded.type === "SourceDeleted" || recorded.type === "WorkflowDeleted") {
      statement(db, "DELETE FROM source_logs WHERE source_id = ?").run((recorded.data as SourceDeleted["data"]).id);
      return;
    }
    const row = runLogRow(recorded);
    statement(
      db,
      `INSERT OR IGNORE INTO source_logs (source_id, invocation_id, trigger, started_ms, ended_ms, compute_ms, ok, error, lines, seq, stream_revision)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      row.source_id,
      row.invocation_id,
      row.trigger,
      row.started_ms,
      row.ended_ms,
      row.compute_ms,
      row.ok,
      row.error,
      row.lines,
      row.seq,
      recorded.revision,
    );
    keptLogs.touch(row.source_id);
  },
  afterBatch(db) {
    keptLogs.trim(db);
  },
};

const keptLogs = new KeptWindow("source_logs", "source_id", KEPT_RUN_LOGS);
