import type { Database } from "better-sqlite3";
import { statement } from "../src/readModels/statements.js";

/**
 * The newest `kept` rows per key of a table (by `seq`), trimmed once per key at the end of each
 * projector batch rather than after every insert: readers never see more (the batch is one
 * transaction), and a replay of a million events of one emitter trims once per batch, not a
 * million times. Applying is synchronous, so one window serves every projector.
 */
export class KeptWindow {
  readonly #touched = new Set<string>();

  constructor(
    private readonly table: string,
    private readonly keyColumn: string,
    private readonly kept: number,
  ) {}

  /** A row of `key` was inserted in this batch. */
  touch(key: string): void {
    this.#touched.add(key);
  }

  /** For the projection's afterBatch. */
  trim(db: Database): void {
    const remove = statement(
      db,
      `DELETE FROM ${this.table} WHERE ${this.keyColumn} = ? AND seq < (
         SELECT seq FROM ${this.table} WHERE ${this.keyColumn} = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
    );
    for (const key of this.#touched) remove.run(key, key, this.kept - 1);
    this.#touched.clear();
  }
}
