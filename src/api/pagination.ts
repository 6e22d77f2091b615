import { ApiError } from "./errors.js";
import type { Page, PageRequest } from "../readModels/page.js";
import type { Schema } from "./validation.js";

export const paginationQuery: Record<string, Schema> = {
  limit: { type: "integer", minimum: 1, maximum: 100, default: 10, description: "page size, 1 to 100" },
  after: { type: "string", description: "cursor: items after it" },
  before: { type: "string", description: "cursor: items before it" },
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
  throw new ApiError(400, "invalid_request", `query.${name} is not a cursor this service issued`, [
    { path: `query.${name}`, message: "is not a valid cursor" },
  ]);
}

export function pageRequest(query: { limit?: number; after?: string; before?: string }): PageRequest {
  if (query.after !== undefined && query.before !== undefined) {
    throw new ApiError(400, "invalid_request", "pass either after or before, not both", [
      { path: "query.before", message: "cannot be combined with after" },
    ]);
  }
  return {
    limit: query.limit ?? 10,
    ...(query.after !== undefined ? { after: decodeCursor(query.after, "after") } : {}),
    ...(query.before !== undefined ? { before: decodeCursor(query.before, "before") } : {}),
  };
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

export const pageInfoSchema: Schema = {
  type: "object",
  properties: {
    total_count: { type: "integer" },
    count: { type: "integer" },
    start_cursor: { type: ["string", "null"] },
    end_cursor: { type: ["string", "null"] },
  },
  required: ["total_count", "count", "start_cursor", "end_cursor"],
};
