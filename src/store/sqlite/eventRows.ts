import type { RecordedEvent } from "../eventStore.js";

/** A row of `events` as the read statements return it: an array in `eventColumns` order (no object per row). */
export type EventRow = [
  position: number,
  stream: string,
  revision: number,
  id: string,
  type: string,
  data: string,
  metadata: string,
  created: number,
];

const COLUMNS = ["position", "stream", "revision", "id", "type", "data", "metadata", "created"] as const;
export const eventColumns = COLUMNS.join(", ");

/** A page of $all, the events after a position in position order, with `columns` selected. */
const readAllOf = (columns: string) => `SELECT ${columns} FROM events WHERE position > ? ORDER BY position LIMIT ?`;

/** A page of $all: the events after a position, in position order. */
export const readAllSql = readAllOf(eventColumns);

/**
 * `readAllSql` with the data of the given types left in the file (`null` and metadata `{}`, as
 * JSON texts): SQLite never makes strings of them, and `rowsAsJson` splices them in as they are.
 */
export function readAllLeavingDataSql(types: readonly string[]): string {
  if (types.length === 0) return readAllSql;
  const list = types
    .map((type) => {
      if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(type)) throw new RangeError(`not an event type: ${JSON.stringify(type)}`);
      return `'${type}'`;
    })
    .join(", ");
  const left = `type IN (${list})`;
  const leftAs: Partial<Record<(typeof COLUMNS)[number], string>> = { data: "'null'", metadata: "'{}'" };
  return readAllOf(
    COLUMNS.map((column) => (leftAs[column] === undefined ? column : `CASE WHEN ${left} THEN ${leftAs[column]} ELSE ${column} END`)).join(
      ", ",
    ),
  );
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row[3],
    type: row[4],
    data: JSON.parse(row[5]) as unknown,
    metadata: JSON.parse(row[6]) as Record<string, unknown>,
    stream: row[1],
    revision: row[2],
    position: row[0],
    created: row[7],
  };
}

/**
 * Rows as one JSON text: an array of the events as `RecordedEvent` objects, their data and
 * metadata spliced in as stored (JSON already), so one `JSON.parse` of it gives the events
 * themselves, every field parsed.
 */
export function rowsAsJson(rows: readonly EventRow[]): string {
  let text = "[";
  for (let i = 0; i < rows.length; i++) {
    const [position, stream, revision, id, type, data, metadata, created] = rows[i];
    if (i > 0) text += ",";
    text += `{"id":${JSON.stringify(id)},"type":${JSON.stringify(type)},"data":${data},"metadata":${metadata},"stream":${JSON.stringify(stream)},"revision":${revision},"position":${position},"created":${created}}`;
  }
  return `${text}]`;
}

/** The other side of `rowsAsJson`. */
export function recordedEventsOfJson(text: string): RecordedEvent[] {
  return JSON.parse(text) as RecordedEvent[];
}
