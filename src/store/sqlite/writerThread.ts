// The SQLite event store's writer thread (see src/sqliteWriter/thread.ts): owns the write
// connection and runs each group commit, and each group of truncations, in order, answering once durable.
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { serveWrites } from "../../sqliteWriter/serve.js";
import { SqliteAppender, type EncodedAppend } from "./appender.js";
import type { Truncation } from "../truncations.js";
import { encodeError } from "./errorCodec.js";
import { prepareDatabase } from "./schema.js";

export type StoreWrite =
  | { readonly op: "commit"; readonly group: readonly EncodedAppend[] }
  | { readonly op: "truncate"; readonly truncations: readonly Truncation[] };

const db = new Database((workerData as { file: string }).file);
prepareDatabase(db);
const appender = new SqliteAppender(db, encodeError);

serveWrites<StoreWrite>(
  (write) => {
    if (write.op === "commit") return appender.commit(write.group);
    appender.truncate(write.truncations);
    return undefined;
  },
  () => db.close(),
  encodeError,
);
