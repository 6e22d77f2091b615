import Database from "better-sqlite3";
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import type { EventStore } from "../store/eventStore.js";
import type { Projection } from "./projection.js";
import { parkedEvents, rebuildProjections, type CatchUpOptions } from "./projector.js";

export interface RebuiltFile {
  /** The log position the read models are at. */
  readonly position: number;
  /** Of the whole, the time spent making the new file durable and putting it in place. */
  readonly finishMs: number;
  /** Events a read model could not apply and parked (`headwater projections parked` lists them). */
  readonly parked: number;
}

/** A SQLite file and the files beside it that belong to it. */
function removeDatabase(file: string): void {
  for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true });
}

function fsyncPath(file: string): void {
  const fd = openSync(file, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `headwater projections rebuild`: every read model rebuilt from the log into a new file beside
 * `file`, which then replaces it. Until the rename, `file` is as it was: a rebuild that fails or
 * is killed leaves the old read models, and a stray `<file>.rebuilding` that the next rebuild
 * removes. Nobody reads the new file while it is built, so it is built without a WAL (journal in
 * memory, no fsync per batch) and made durable once, at the end: every page is written once,
 * where in place each was written to the WAL and copied back at the close (~7 % of the rebuild,
 * bench/results/rebuild.md). The caller holds the data directory: no node has `file` open.
 */
export async function rebuildReadModelsFile(
  store: EventStore,
  file: string,
  projections: readonly Projection[],
  progress?: CatchUpOptions,
): Promise<RebuiltFile> {
  const aside = `${file}.rebuilding`;
  removeDatabase(aside);
  const db = new Database(aside);
  let position: number;
  let parked: number;
  let finishing: number;
  try {
    // MEMORY, not OFF: a batch that fails is rolled back and applied again.
    db.pragma("journal_mode = MEMORY");
    db.pragma("synchronous = OFF");
    position = await rebuildProjections(store, db, projections, progress);
    parked = parkedEvents(db).length;
    finishing = performance.now();
    db.pragma("synchronous = FULL");
    // The mode the node opens it in (openReadModels), written into the file's header.
    if (db.pragma("journal_mode = WAL", { simple: true }) !== "wal") throw new Error(`could not put ${aside} in WAL mode`);
    db.close();
  } catch (error) {
    if (db.open) db.close();
    removeDatabase(aside);
    throw error;
  }
  fsyncPath(aside);
  if (existsSync(file)) {
    // The old file's WAL must not outlive it: SQLite would apply it to whatever file has the
    // name. Closing its last connection copies it back and removes it (and its -shm).
    new Database(file).close();
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
  }
  renameSync(aside, file);
  fsyncPath(path.dirname(file));
  return { position, finishMs: performance.now() - finishing, parked };
}
