import { Type, type TSchema } from "@sinclair/typebox";
import { DomainError } from "../../commands/decider.js";
import type { Page, PageRequest } from "../readModels/page.js";

export const pageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: "page size, 1 to 100" })),
  after: Type.Optional(Type.String({ maxLength: 200, description: "cursor: items after it" })),
  before: Type.Optional(Type.String({ maxLength: 200, description: "cursor: items before it" })),
};

export interface PageInfo {
  total_count: number;
  count: number;
  start_cursor: string | null;
  end_cursor: string | null;
}

// Cursors are opaque to clients: base64url of the keyset position.
export const encodeCursor = (seq: number): string => Buffer.from(JSON.stringify({ p: seq })).toString("base64url");

export function decodeCursor(cursor: string, name: "after" | "before"): number {
  try {
    const decoded = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { p?: unknown };
    if (typeof decoded.p === "number" && Number.isSafeInteger(decoded.p)) return decoded.p;
  } catch {
    // fall through to the error below
  }
  throw new DomainError("invalid_request", `query.${name} is not a cursor this service issued`, [
    { path: `query.${name}`, message: "is not a valid cursor" },
  ]);
}

export function pageRequest(query: { limit?: number; after?: string; before?: string }): PageRequest {
  if (query.after !== undefined && query.before !== undefined) {
    throw new DomainError("invalid_request", "pass either after or before, not both", [
      { path: "query.before", message: "cannot be combined with after" },
    ]);
  }
  return {
    limit: query.limit ?? 10,
    ...(query.after !== undefined ? { after: decodeCursor(query.after, "after") } : {}),
    ...(query.before !== undefined ? { before: decodeCursor(query.before, "before") } : {}),
  };
}

/**
 * The page size of a listing that also takes `n` (the seed's alias of `limit`): both at once must
 * agree, else 400, rather than `n` silently winning. `rawLimit` is the query text (the validated
 * `limit` is defaulted, so it cannot tell whether the client sent one).
 */
export function aliasedLimit(n: number | undefined, rawLimit: unknown, page: PageRequest): number {
  if (n === undefined) return page.limit;
  if (rawLimit !== undefined && page.limit !== n) {
    throw new DomainError("invalid_request", "n and limit differ: n is an alias of limit, give one of them", [
      { path: "query.n", message: "differs from query.limit" },
    ]);
  }
  return n;
}

export function pageBody<Row extends { seq: number }, Item>(page: Page<Row>, toItem: (row: Row) => Item) {
  const first = page.rows[0];
  const last = page.rows[page.rows.length - 1];
  const page_info: PageInfo = {
    total_count: page.total,
    count: page.rows.length,
    start_cursor: first ? encodeCursor(first.seq) : null,
    end_cursor: last ? encodeCursor(last.seq) : null,
  };
  return { page_info, data: page.rows.map(toItem) };
}

export const PageInfo = Type.Object(
  {
    total_count: Type.Integer(),
    count: Type.Integer(),
    start_cursor: Type.Union([Type.String(), Type.Null()]),
    end_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: "PageInfo" },
);

/** A paginated answer: page_info and a page of `item`. */
export const Paged = <T extends TSchema>(item: T) => Type.Object({ page_info: PageInfo, data: Type.Array(item) });

/** A single-resource answer: {data: item}. */
export const Data = <T extends TSchema>(item: T) => Type.Object({ data: item });
