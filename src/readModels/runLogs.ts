import type { Database } from "better-sqlite3";
import type { RunLogRow } from "../../projections/runLogs.js";
import type { LogLine } from "../../commands/runLogs/runLog.js";
import { keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";

/** One execution of user code, as logs listings and the $logs channel show it. */
export interface RunLog {
  readonly sourceId: string;
  readonly invocationId: string;
  readonly trigger: string;
  readonly startedMs: number;
  readonly endedMs: number;
  readonly computeMs: number;
  readonly ok: boolean;
  readonly error: { name: string; message: string; stack?: string } | null;
  readonly lines: LogLine[];
  readonly seq: number;
}

export const toRunLog = (row: RunLogRow): RunLog => ({
  sourceId: row.source_id,
  invocationId: row.invocation_id,
  trigger: row.trigger,
  startedMs: row.started_ms,
  endedMs: row.ended_ms,
  computeMs: row.compute_ms,
  ok: row.ok === 1,
  error: row.error ? (JSON.parse(row.error) as RunLog["error"]) : null,
  lines: JSON.parse(row.lines) as LogLine[],
  seq: row.seq,
});

/** Queries over the run logs read model (projections/runLogs.ts): the newest 100 per source. */
export class RunLogsReadModel {
  constructor(private readonly db: Database) {}

  logs(sourceId: string, page: PageRequest): Page<RunLog> {
    // At most 100 rows per source are kept, so counting them stays cheap.
    const total = statement<[string], { n: number }>(this.db, "SELECT COUNT(*) AS n FROM source_logs WHERE source_id = ?").get(sourceId)!.n;
    return mapPage(
      keysetPage<RunLogRow>(
        this.db,
        { from: "source_logs", where: "source_id = ?", params: [sourceId], order: "desc", total, seqIsRowid: true },
        page,
      ),
      toRunLog,
    );
  }

  log(sourceId: string, invocationId: string): RunLog | undefined {
    const row = statement<[string, string], RunLogRow>(this.db, "SELECT * FROM source_logs WHERE source_id = ? AND invocation_id = ?").get(
      sourceId,
      invocationId,
    );
    return row && toRunLog(row);
  }

  /** Kept run logs after a log position, oldest first: $logs SSE catch-up. */
  logsAfter(sourceId: string, afterSeq: number, limit: number): RunLog[] {
    return statement<[string, number, number], RunLogRow>(
      this.db,
      "SELECT * FROM source_logs WHERE source_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?",
    )
      .all(sourceId, afterSeq, limit)
      .map(toRunLog);
  }

  /** The log position of a kept run; 0 (every kept run follows) when it is no longer kept. */
  cursorOf(sourceId: string, invocationId: string): number {
    return (
      statement<[string, string], { seq: number }>(this.db, "SELECT seq FROM source_logs WHERE source_id = ? AND invocation_id = ?").get(
        sourceId,
        invocationId,
      )?.seq ?? 0
    );
  }

  /** Sources whose window of run logs is full. */
  fullSources(window: number): string[] {
    return statement<[number], { source_id: string }>(this.db, "SELECT source_id FROM source_logs GROUP BY source_id HAVING COUNT(*) >= ?")
      .all(window)
      .map((r) => r.source_id);
  }

  oldestKeptRevision(sourceId: string): { revision: number; count: number } | undefined {
    return statement<[string], { revision: number; count: number }>(
      this.db,
      "SELECT MIN(stream_revision) AS revision, COUNT(*) AS count FROM source_logs WHERE source_id = ? HAVING COUNT(*) > 0",
    ).get(sourceId);
  }
}
