// The embedded bus's writer thread (see src/sqliteWriter/thread.ts): each request is a group of
// publishes and offset commits, committed in one transaction and answered once durable.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { encodePlainError, serveWrites } from "../../sqliteWriter/serve.js";
import { MessageLogWriter, type LogWrite } from "./logWriter.js";

const db = new Database((workerData as { file: string }).file);
db.pragma("journal_mode = WAL");
// FULL: a publish is answered only after the WAL is fsync'd, so an acknowledged message survives power loss.
db.pragma("synchronous = FULL");
db.pragma("busy_timeout = 5000");
const writer = new MessageLogWriter(db, encodePlainError);

serveWrites<readonly LogWrite[]>(
  (writes) => writer.apply(writes),
  () => db.close(),
);
