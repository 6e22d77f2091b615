// The read models' WAL checkpoints on a thread of their own (see checkpoints.ts): a second
// connection to the file that copies committed WAL frames back into it when asked.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { serveWrites } from "../sqliteWriter/serve.js";

const db = new Database((workerData as { file: string }).file);
// As the event loop's connection: the read models are derived data (see database.ts).
db.pragma("synchronous = NORMAL");
// PASSIVE never waits for the event loop's connection: it copies what no reader still needs.
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");

serveWrites(
  () => checkpoint.get(),
  () => db.close(),
);
