// A catch-up read's thread (see readAhead.ts): a read-only connection of its own that reads the
// pages of $all one after another, each as one JSON text, answering the requests in order.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { serveWrites } from "../../sqliteWriter/serve.js";
import { readAllLeavingDataSql, rowsAsJson, type EventRow } from "./eventRows.js";
import { PAGE_TEXT_BUDGET, type ReadAheadPage, type ReadAheadThreadData } from "./readAhead.js";

const { file, fromPosition, pageSize, leaveDataOf } = workerData as ReadAheadThreadData;
let db: Database.Database | undefined;
let read: Database.Statement | undefined;
let cursor = fromPosition;
/** A page's first statement call: 32 rows of the largest events (512 KB) are 16 MB. */
const FIRST_SLICE = 32;
/** Rows still to read for the subscription's current batch (a page cut by its size leaves some). */
let batchLeft = pageSize;

/** Opened by the first request, so a file that cannot be opened fails it with SQLite's own error. */
function open(): Database.Statement {
  db = new Database(file, { readonly: true, fileMustExist: true });
  db.pragma("busy_timeout = 10000");
  return db.prepare(readAllLeavingDataSql(leaveDataOf)).raw(true);
}

serveWrites(
  (): ReadAheadPage => {
    read ??= open();
    const after = cursor;
    // In slices sized from the rows read so far, stopping at the budget: a page of large events
    // ends early and its batch goes on in the next page, so the pages held ahead stay a few
    // megabytes whatever the events weigh, while a page of small ones takes two statement calls.
    let rows: EventRow[] = [];
    let bytes = 0;
    let cut = false;
    for (;;) {
      const guess = rows.length === 0 ? FIRST_SLICE : Math.floor(((PAGE_TEXT_BUDGET - bytes) * rows.length) / bytes);
      const asked = Math.max(1, Math.min(guess, batchLeft - rows.length));
      const slice = read.all(rows.length > 0 ? rows[rows.length - 1][0] : cursor, asked) as EventRow[];
      rows = rows.length > 0 ? rows.concat(slice) : slice;
      for (const row of slice) bytes += row[5].length + row[6].length;
      if (slice.length < asked || rows.length === batchLeft) break;
      if (bytes >= PAGE_TEXT_BUDGET) {
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
