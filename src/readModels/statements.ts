import type { Database, Statement } from "better-sqlite3";

// Compiling SQL costs about twice as much as running it: projections and queries reuse one
// compiled statement per text per database.
const caches = new WeakMap<Database, Map<string, Statement>>();

export function statement<Params extends unknown[] | Record<string, unknown> = unknown[], Row = unknown>(
  db: Database,
  sql: string,
): Statement<Params, Row> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map<string, Statement>()));
  let compiled = cache.get(sql);
  if (!compiled) cache.set(sql, (compiled = db.prepare(sql)));
  return compiled as unknown as Statement<Params, Row>;
}
