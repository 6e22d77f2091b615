import type { Database } from "better-sqlite3";
import { statement } from "./statements.js";

/** A decoded page request: positions are the listing's sort key (a log position, `seq`). */
export interface PageRequest {
  readonly limit: number;
  readonly after?: number;
  readonly before?: number;
}

export interface Page<Row> {
  readonly rows: Row[];
  readonly total: number;
}

/**
 * Keyset pagination over an indexed `seq` column: a page costs one index range scan of `limit`
 * rows at any depth. `order` is the listing's reading order; `after` moves along it, `before` back.
 */
export function keysetPage<Row extends { seq: number }>(
  db: Database,
  query: {
    from: string;
    where: string;
    params: readonly unknown[];
    order: "asc" | "desc";
    total: number;
    /**
     * `seq` is the table's rowid and the index `where` uses is not ordered by it (it carries the
     * rowid, as every index does): the page's rowids are sorted out of the index first, and only
     * the page's rows are read, not every row `where` matches.
     */
    seqIsRowid?: boolean;
  },
  page: PageRequest,
): Page<Row> {
  const forward = query.order === "asc" ? ">" : "<";
  const backward = query.order === "asc" ? "<" : ">";
  const reversed = query.order === "asc" ? "DESC" : "ASC";
  const order = query.order.toUpperCase();
  const select = (condition: string, direction: string) =>
    query.seqIsRowid
      ? `SELECT * FROM ${query.from} WHERE seq IN (SELECT seq FROM ${query.from} WHERE ${condition} ORDER BY seq ${direction} LIMIT ?) ORDER BY seq ${direction}`
      : `SELECT * FROM ${query.from} WHERE ${condition} ORDER BY seq ${direction} LIMIT ?`;
  let rows: Row[];
  if (page.before !== undefined) {
    rows = statement(db, select(`${query.where} AND seq ${backward} ?`, reversed)).all(...query.params, page.before, page.limit) as Row[];
    rows.reverse();
  } else if (page.after !== undefined) {
    rows = statement(db, select(`${query.where} AND seq ${forward} ?`, order)).all(...query.params, page.after, page.limit) as Row[];
  } else {
    rows = statement(db, select(query.where, order)).all(...query.params, page.limit) as Row[];
  }
  return { rows, total: query.total };
}

export function countOf(db: Database, table: string, owner: string): number {
  const row = statement<[string], { n: number }>(db, `SELECT n FROM ${table} WHERE owner = ?`).get(owner);
  return row?.n ?? 0;
}

/** The same page with each row turned into its view. */
export function mapPage<Row, View>(page: Page<Row>, toView: (row: Row) => View): Page<View> {
  return { rows: page.rows.map(toView), total: page.total };
}
