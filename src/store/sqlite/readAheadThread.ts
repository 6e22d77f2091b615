// A catch-up read's thread (see readAhead.ts): a read-only connection of its own that reads the
// pages of $all one after another, each as one JSON text, answering the requests in order.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { serveWrites } from "../../sqliteWriter/serve.js";
import { readAllSql, rowsAsJson, type EventRow } from "./eventRows.js";
import { PAGE_TEXT_BUDGET, type ReadAheadPage } from "./readAhead.js";

const { file, fromPosition, pageSize } = workerData as { file: string; fromPosition: number; pageSize: number };
let db: Database.Database | undefined;
let read: Database.Statement | undefined;
let cursor = fromPosition;
/** Rows still to read for the subscription's current batch (a page cut by its size leaves some). */
let batchLeft = pageSize;

/** Opened by the first request, so a file that cannot be opened fails it with SQLite's own error. */
function open(): Database.Statement {
  db = new Database(file, { readonly: true, fileMustExist: true });
  db.pragma("busy_timeout = 10000");
  return db.prepare(readAllSql).raw(true);
}

serveWrites(
  (): ReadAheadPage => {
    read ??= open();
    const after = cursor;
    const rows: EventRow[] = [];
    let bytes = 0;
    let cut = false;
    for (const row of read.iterate(cursor, batchLeft) as IterableIterator<EventRow>) {
      rows.push(row);
      bytes += row[5].length + row[6].length;
      // Large events: the page ends early (its batch goes on in the next page), so the pages
      // held ahead stay a few megabytes whatever the events weigh.
      if (bytes >= PAGE_TEXT_BUDGET && rows.length < batchLeft) {
        cut = true;
        break;
      }
    }
    const atHead = !cut && rows.length < batchLeft;
    if (rows.length > 0) cursor = rows[rows.length - 1][0];
    batchLeft = cut ? batchLeft - rows.length : pageSize;
    return { after, count: rows.length, cut, atHead, json: rowsAsJson(rows) };
  },
  () => db?.close(),
);
