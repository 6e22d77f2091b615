import type { Database, Statement } from "better-sqlite3";
import { statement } from "../src/readModels/statements.js";

/** Rows per INSERT statement: past a few dozen the gain levels off (bench/results/rebuild.md). */
const ROWS_PER_STATEMENT = 32;

/**
 * One INSERT sent to SQLite several rows to a statement: a call into better-sqlite3 costs about as
 * much as SQLite's own work for a small row, so a replay of a million rows spends a quarter less
 * this way. `into(db)` gives the buffer of one batch.
 */
export class MultiRowInsert {
  readonly #one: string;
  readonly #many: string;

  /** `head` is the statement up to VALUES, e.g. "INSERT OR IGNORE INTO t (a, b)". */
  constructor(
    head: string,
    private readonly columns: number,
  ) {
    const row = `(${Array.from({ length: columns }, () => "?").join(", ")})`;
    this.#one = `${head} VALUES ${row}`;
    this.#many = `${head} VALUES ${Array.from({ length: ROWS_PER_STATEMENT }, () => row).join(", ")}`;
  }

  /** A fresh buffer per batch, so nothing is left over from a batch that failed. */
  into(db: Database): PendingRows {
    return new PendingRows(statement(db, this.#one), statement(db, this.#many), this.columns);
  }
}

/**
 * Rows added in order and inserted in that order. `flush` must come before any other statement of
 * the batch that reads or changes the table, and at the batch's end.
 */
export class PendingRows {
  /** The values of the next full statement, written in place (better-sqlite3 copies them on run). */
  readonly #values: unknown[];
  #filled = 0;

  constructor(
    private readonly one: Statement,
    private readonly many: Statement,
    private readonly columns: number,
  ) {
    this.#values = new Array<unknown>(ROWS_PER_STATEMENT * columns).fill(null);
  }

  add(row: readonly unknown[]): void {
    if (row.length !== this.columns) throw new RangeError(`a row of ${this.columns} values, got ${row.length}`);
    const values = this.#values;
    let at = this.#filled;
    for (let i = 0; i < row.length; i++) values[at++] = row[i];
    this.#filled = at;
    if (at === values.length) {
      this.many.run(values);
      this.#filled = 0;
    }
  }

  /** Inserts the rows added since the last full statement. */
  flush(): void {
    for (let start = 0; start < this.#filled; start += this.columns) this.one.run(this.#values.slice(start, start + this.columns));
    this.#filled = 0;
  }
}
