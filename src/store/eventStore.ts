// The event store port. Every adapter (SQLite, PostgreSQL, EventStoreDB) implements
// exactly this and passes the shared contract suite in test/store/contract.ts.

/** Where an append expects the stream to be. A number is the revision of the stream's last event. */
export type ExpectedRevision = "no_stream" | "exists" | "any" | number;

export type EventMetadata = Record<string, unknown>;

export interface NewEvent<Type extends string = string, Data = unknown> {
  /** uuid; generated when absent. Appends are idempotent by event id. */
  readonly id?: string;
  readonly type: Type;
  readonly data: Data;
  readonly metadata?: EventMetadata;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  readonly id: string;
  readonly type: Type;
  readonly data: Data;
  readonly metadata: EventMetadata;
  readonly stream: string;
  /** 0-based revision within the stream. */
  readonly revision: number;
  /** Global position in $all: strictly increasing in commit order, starting at 1; gaps allowed. */
  readonly position: number;
  /** Epoch milliseconds when the event was appended. */
  readonly created: number;
}

export interface AppendOptions {
  /** Defaults to "any". */
  readonly expectedRevision?: ExpectedRevision;
}

export interface AppendResult {
  /** Revision of the stream's last event after the append. */
  readonly nextExpectedRevision: number;
  /** Global position of the last appended event. */
  readonly position: number;
}

export interface ReadStreamOptions {
  readonly direction?: "forwards" | "backwards";
  /** Inclusive start; defaults to the first event (forwards) or the last (backwards). */
  readonly fromRevision?: number;
  readonly maxCount?: number;
}

export interface ReadAllOptions {
  /**
   * Exclusive: events with position > fromPosition. Defaults to 0 (the start).
   * Must be 0 or a position this store reported (an event's, an append's, headPosition):
   * EventStoreDB positions are log offsets, and other numbers are not valid read points.
   */
  readonly fromPosition?: number;
  readonly maxCount?: number;
}

export interface SubscribeToAllOptions {
  /** Exclusive checkpoint (0 or a position the store reported): delivers events with position > fromPosition, then tails live. */
  readonly fromPosition: number;
  /**
   * Called with consecutive batches in position order; the next batch waits for the
   * returned promise. A rejection stops the subscription and is passed to onError.
   */
  readonly onEvents: (events: readonly RecordedEvent[]) => Promise<void> | void;
  readonly onError?: (error: unknown) => void;
  /** Largest batch handed to onEvents. */
  readonly batchSize?: number;
  /**
   * Event types the subscriber reads from the log itself, through `attachableFile` (a rebuild):
   * a store with that file may hand these over with `data` null and `metadata` empty, everything
   * else kept (see `dataLeftInLog`). Events of these types may still come whole. Stores without
   * `attachableFile` ignore it.
   */
  readonly leaveDataOf?: ReadonlySet<string>;
}

/** True for an event handed over without its data (SubscribeToAllOptions.leaveDataOf): read it from the log. */
export const dataLeftInLog = (event: RecordedEvent): boolean => event.data === null;

export interface AllSubscription {
  /** Stops delivery; resolves once no handler call is running. */
  stop(): Promise<void>;
}

export interface EventStore {
  append(stream: string, events: readonly NewEvent[], options?: AppendOptions): Promise<AppendResult>;
  /** Events of one stream; an empty array when the stream does not exist (or was fully truncated). */
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  subscribeToAll(options: SubscribeToAllOptions): AllSubscription;
  /** Position of the last event committed to $all (0 when empty). */
  headPosition(): Promise<number>;
  /**
   * Revision of the stream's last event, or undefined when it never existed.
   * Truncation does not change it: a truncated stream keeps counting from where it was.
   */
  streamRevision(stream: string): Promise<number | undefined>;
  /** `streamRevision` of several streams with one read (one round trip), in the order given. */
  streamRevisions(streams: readonly string[]): Promise<(number | undefined)[]>;
  /** Retention: deletes the stream's events with revision < beforeRevision (from stream reads and $all). */
  truncateBefore(stream: string, beforeRevision: number): Promise<void>;
  close(): Promise<void>;
  /**
   * A SQLite file holding the log, which another connection may ATTACH and read with SQL (the
   * embedded store on a file; absent for an in-memory log and for the remote stores).
   */
  readonly attachableFile?: string;
}

/** The typed optimistic-concurrency failure; the command layer retries after re-reading. */
export class WrongExpectedRevisionError extends Error {
  override readonly name = "WrongExpectedRevisionError";
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | undefined,
  ) {
    super(`stream ${stream}: expected revision ${String(expected)}, actual ${actual === undefined ? "no_stream" : actual}`);
  }
}

/** An append whose event ids partly exist already: neither a fresh append nor a replay of one. */
export class IdempotencyConflictError extends Error {
  override readonly name = "IdempotencyConflictError";
  constructor(
    readonly stream: string,
    readonly eventId: string,
  ) {
    super(`stream ${stream}: event ${eventId} was appended before with a different batch`);
  }
}
