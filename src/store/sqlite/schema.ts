import type { Database } from "better-sqlite3";

/**
 * 1: the tables. 2: `streams` holds a revision only past a truncation (streamRevisionSql); same
 * tables, but a build that knows only 1 would read stale revisions, so a newer file is refused.
 */
const schemaVersion = 2;

/**
 * Connection settings and tables. auto_vacuum must be chosen before the first table exists, so
 * it comes first; WAL + synchronous=FULL makes every acknowledged commit survive a power cut.
 */
export function prepareDatabase(db: Database): void {
  db.pragma("busy_timeout = 10000");
  db.pragma("auto_vacuum = INCREMENTAL");
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  // Keeps the WAL file from staying at its high-water mark after a burst.
  db.pragma("journal_size_limit = 16777216");
  const migrate = db.transaction(() => {
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > schemaVersion) {
      throw new Error(`this event log was written by a newer Headwater (format ${version}; this build reads up to ${schemaVersion})`);
    }
    if (version >= 1) {
      if (version < schemaVersion) db.pragma(`user_version = ${schemaVersion}`);
      return;
    }
    db.exec(`
      CREATE TABLE events (
        -- AUTOINCREMENT: a position is never reused, even after the newest events are truncated.
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        stream   TEXT    NOT NULL,
        revision INTEGER NOT NULL,
        id       TEXT    NOT NULL,
        type     TEXT    NOT NULL,
        data     TEXT    NOT NULL,
        metadata TEXT    NOT NULL,
        created  INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX events_by_stream ON events (stream, revision);
      CREATE UNIQUE INDEX events_by_id ON events (id);
      -- A stream's revision once its events are truncated (see streamRevisionSql).
      CREATE TABLE streams (
        stream   TEXT    PRIMARY KEY,
        revision INTEGER NOT NULL
      ) WITHOUT ROWID;
      PRAGMA user_version = ${schemaVersion};
    `);
  });
  // IMMEDIATE: two processes opening a new file at once must not both create the tables.
  migrate.immediate();
}

/**
 * A stream's revision (-1: no stream; bind the stream twice): its last event's, or the one kept in
 * `streams` when a truncation removed its events. Appends write only `events` (a `streams` row
 * per appended stream would be one more B-tree page per stream per commit: with many sources,
 * ~30 % of a commit's pages); a truncation that removes a stream's last event stores its revision
 * first. Rows written by earlier versions (every append upserted them) are never ahead of the
 * events, so the larger of the two is right for every file.
 */
export const streamRevisionSql =
  "SELECT max(coalesce((SELECT max(revision) FROM events WHERE stream = ?), -1), " +
  "coalesce((SELECT revision FROM streams WHERE stream = ?), -1)) AS revision";

/** The revision `streamRevisionSql` read: undefined for a stream that never existed. */
export const revisionOf = (row: unknown): number | undefined => {
  const revision = (row as { revision: number }).revision;
  return revision < 0 ? undefined : revision;
};
