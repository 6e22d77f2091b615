import Database from "better-sqlite3";

/**
 * The node's own read-model database. It is derived data: any crash loses at most work the
 * projector will redo from its checkpoint, so NORMAL sync is enough under WAL.
 */
export function openReadModels(file: string): Database.Database {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  return db;
}
