// A catch-up read's thread (see readAhead.ts): a read-only connection of its own that reads the
// pages of $all one after another, each as one JSON text, answering the requests in order.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { serveWrites } from "../../sqliteWriter/serve.js";
import { readAllSql, rowsAsJson, type EventRow } from "./eventRows.js";
import type { ReadAheadPage } from "./readAhead.js";

const { file, fromPosition, pageSize } = workerData as { file: string; fromPosition: number; pageSize: number };
let db: Database.Database | undefined;
let read: Database.Statement | undefined;
let cursor = fromPosition;

/** Opened by the first request, so a file that cannot be opened fails it with SQLite's own error. */
function open(): Database.Statement {
  db = new Database(file, { readonly: true, fileMustExist: true });
  db.pragma("busy_timeout = 10000");
  return db.prepare(readAllSql).raw(true);
}

serveWrites(
  (): ReadAheadPage => {
    read ??= open();
    const rows = read.all(cursor, pageSize) as EventRow[];
    const after = cursor;
    if (rows.length > 0) cursor = rows[rows.length - 1][0];
    return { after, count: rows.length, json: rowsAsJson(rows) };
  },
  () => db?.close(),
);
