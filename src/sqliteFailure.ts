// SQLite's failures of the storage itself, as opposed to a statement's or a projection's own:
// the same write succeeds once the file can be written again. One list, read by the HTTP errors
// (what a client is told, and when to retry) and by the projector (retry a batch, never park it).

/** What kind of storage failure an error is, by its SQLite code; undefined for anything else. */
export type StorageFailure =
  /** Held locked past the busy timeout (another writer, a long checkpoint): gone in a moment. */
  | "busy"
  /** The disk is full: an operator must free space. */
  | "full"
  /** An I/O error, a read-only or vanished file: an operator must repair the disk or the files. */
  | "unwritable"
  /** The engine's own trouble (out of memory, a damaged or foreign file, an interrupted call). */
  | "engine";

const KINDS: readonly [RegExp, StorageFailure][] = [
  [/^SQLITE_(BUSY|LOCKED)/, "busy"],
  [/^SQLITE_FULL/, "full"],
  [/^SQLITE_(IOERR|READONLY|CANTOPEN)/, "unwritable"],
  [/^SQLITE_(NOMEM|PROTOCOL|CORRUPT|NOTADB|INTERRUPT)/, "engine"],
];

export function storageFailure(error: unknown): StorageFailure | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code !== "string") return undefined;
  return KINDS.find(([pattern]) => pattern.test(code))?.[1];
}
