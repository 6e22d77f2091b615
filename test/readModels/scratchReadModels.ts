import type { Database } from "better-sqlite3";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openReadModels } from "../../src/readModels/database.js";

/** A read-model file of its own, one projection's tables made, its automatic checkpoint off (the WAL only grows). */
export interface ScratchReadModels {
  readonly db: Database;
  readonly file: string;
  close(): void;
}

export function scratchReadModels(label: string, schema: readonly string[]): ScratchReadModels {
  const dir = mkdtempSync(join(tmpdir(), `hw-${label}-`));
  const file = join(dir, "readmodels.db");
  const db = openReadModels(file);
  db.pragma("wal_autocheckpoint = 0");
  for (const statement of schema) db.exec(statement);
  return {
    db,
    file,
    close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * WAL pages one commit writes, on average over `commits` commits made by `commit(c)`: the WAL is
 * checkpointed and started anew first, then its growth counted in frames (a header and a page each).
 */
export function walPagesPerCommit(scratch: ScratchReadModels, commits: number, commit: (c: number) => void): number {
  const { db, file } = scratch;
  db.pragma("wal_checkpoint(TRUNCATE)");
  commit(-1); // the first commit after the checkpoint starts the WAL anew
  const walBytes = () => statSync(`${file}-wal`).size;
  const before = walBytes();
  for (let c = 0; c < commits; c++) commit(c);
  const frameBytes = (db.pragma("page_size", { simple: true }) as number) + 24;
  return (walBytes() - before) / frameBytes / commits;
}

/** Ids spread over the key space as real ones are (not neighbours in the index). */
export const spreadId = (prefix: string, n: number): string =>
  `${prefix}_${String((n * 7919) % 100_000).padStart(5, "0")}abcdefghijklmnopq`;
