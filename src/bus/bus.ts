// The message bus port. The embedded SQLite log and the Kafka adapter implement exactly this
// and pass the shared contract suite in test/bus/contract.ts.

export interface OutgoingMessage {
  /** Hashed to a partition (Kafka's murmur2), so messages with one key keep their order. */
  readonly key: string;
  readonly value: Buffer | string;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * What `value` encodes, as the publisher built it (JSON data). Only a hand-off in this process
   * (Bus.offerLocally) carries it, to the record's `decoded`; a publish never writes it.
   */
  readonly decoded?: unknown;
}

export interface BusRecord {
  readonly topic: string;
  readonly partition: number;
  /** Decimal int64, as Kafka reports it; increases by one per message within a partition. */
  readonly offset: string;
  readonly key: string;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  /** Epoch milliseconds when the message was appended. */
  readonly timestamp: number;
  /**
   * Handed over in this process without being written to the log (Bus.offerLocally): its offset
   * is "-1" and it is never redelivered.
   */
  readonly local?: true;
  /**
   * A local record's value as its publisher built it (OutgoingMessage.decoded), so a handler in
   * the same process need not parse `value`. The same object the publisher holds: read it, do not
   * change it.
   */
  readonly decoded?: unknown;
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
}

/** Capped exponential backoff for a handler that rejected. */
export interface RetryPolicy {
  /** Delay before the second attempt; doubles per attempt. */
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * Per-key consumption. Within a partition, records are read ahead (up to the pending bounds) and
 * grouped by key. A key never has two handler calls at once and its records are handed over in
 * offset order; a key without a running call starts at once, so a handler that never settles (or
 * keeps retrying) for key A does not delay key B on the same partition until the bounds are
 * reached. When a key's call finishes, the records of that key that arrived meanwhile are the
 * next batch. A rejected batch is retried (same records, `retry` backoff, logged at error) while
 * other keys go on. The committed offset is the contiguous completed prefix: everything before
 * the oldest record whose batch has not resolved, committed coalesced (not once per record). After
 * a crash everything past it is redelivered, including records of keys that had finished later,
 * so the handler must dedupe by its own ids.
 */
export interface KeyedConsumeOptions {
  /**
   * Called with every waiting record of one key (same key, offset order, at most maxBatch).
   * `more()` hands over the records of the key that arrived since (offset order, at most
   * maxBatch, empty when none): they become part of this call, done when it resolves and retried
   * with it when it rejects. A handler can so start on later records while it finishes earlier
   * ones (the runner runs a batch while the one before is being recorded). `arrived()` resolves
   * once more records of the key are waiting (at once if some are), or the consumer stops: a
   * handler that keeps going while records keep coming waits on it instead of polling more().
   */
  readonly handler: (records: readonly BusRecord[], more: () => BusRecord[], arrived: () => Promise<void>) => Promise<void>;
  /** Records read but not yet committed, per partition, before reading pauses (default 10_000). */
  readonly maxPendingPerPartition?: number;
  /** Bytes of record values read but not yet committed, per partition, before reading pauses (default 64 MiB). */
  readonly maxPendingBytesPerPartition?: number;
  /** Largest batch handed to the handler at once (default 500). */
  readonly maxBatch?: number;
}

export interface ConsumeOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  /**
   * Per-record mode: called once per record, in offset order within a partition, one record of a
   * partition at a time. The offset is committed only after the returned promise resolved; a
   * rejection is retried (see `retry`), never skipped. Exactly one of `handler` and `keyed`.
   */
  readonly handler?: (record: BusRecord) => Promise<void>;
  /** Per-key mode (see KeyedConsumeOptions). Exactly one of `handler` and `keyed`. */
  readonly keyed?: KeyedConsumeOptions;
  /** Where a group with no committed offset starts: the oldest retained message (default) or the end. */
  readonly fromBeginning?: boolean;
  /**
   * Per-record mode: how many partitions this consumer handles at once (default 1). Keyed mode
   * ignores it: every assigned partition is consumed at once, bounded by the pending bounds.
   */
  readonly partitionsConcurrently?: number;
  /** Defaults to { initialMs: 200, maxMs: 30_000 }. */
  readonly retry?: RetryPolicy;
}

export interface BusConsumer {
  /**
   * Leaves the group gracefully: no new records (keyed: no new batches), waits for running
   * handlers and commits what completed. A record or batch waiting for a retry is given up
   * uncommitted (another member gets it).
   */
  stop(): Promise<void>;
}

export interface Bus {
  /** Creates missing topics. Existing topics keep their partition count (no silent re-keying). */
  ensureTopics(topics: readonly TopicSpec[]): Promise<void>;
  /** Resolves once every message is durable (fsync'd log / all in-sync replicas acknowledged). */
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  /** Resolves once the consumer is a member of its group with partitions assigned. */
  consume(options: ConsumeOptions): Promise<BusConsumer>;
  /**
   * Hands a message straight to this client's keyed consumer of `groupId` that reads the message's
   * partition now, without writing it to the log: it joins its key's queue (after the records of
   * the key read so far) as a record with `local` set. It is only as durable as this process, so
   * it is for requests whose reply is their only acknowledgment. If that consumer lets the
   * partition go before handling it, `fallback` is called to publish it instead. False when no
   * consumer of this client reads the partition in keyed mode now (the caller publishes).
   * Optional: an adapter without it always publishes.
   */
  offerLocally?(groupId: string, topic: string, message: OutgoingMessage, fallback: () => void): boolean;
  /**
   * Ends this node's use of the bus, like a crash would for in-flight work: running handlers are
   * abandoned uncommitted (redelivered to another member or after restart); nothing is lost.
   */
  close(): Promise<void>;
}

export type BusLogLevel = "error" | "warn" | "info" | "debug";

export interface BusLogEntry {
  readonly level: BusLogLevel;
  readonly message: string;
  readonly error?: unknown;
  readonly fields?: Readonly<Record<string, unknown>>;
}

/** Where the bus reports what an operator may want to see (handler failures, client trouble). */
export type BusLog = (entry: BusLogEntry) => void;

/** Default sink: errors to stderr, everything else dropped. */
export const stderrErrorLog: BusLog = (entry) => {
  if (entry.level !== "error") return;
  const detail = entry.error instanceof Error ? `: ${entry.error.message}` : "";
  process.stderr.write(`[bus] ${entry.message}${detail}\n`);
};

export class BusError extends Error {
  override readonly name: string = "BusError";
}

export class BusClosedError extends BusError {
  override readonly name = "BusClosedError";
  constructor() {
    super("the bus is closed");
  }
}

/**
 * The bus could not be reached in time (its brokers down or restarting): what was being published
 * may not have been written. Callers answer "try again", not an internal error.
 */
export class BusUnavailableError extends BusError {
  override readonly name = "BusUnavailableError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(`the message bus is unavailable: ${message}`, options);
  }
}

export class UnknownTopicError extends BusError {
  override readonly name = "UnknownTopicError";
  constructor(readonly topic: string) {
    super(`unknown topic ${JSON.stringify(topic)}: create it with ensureTopics first`);
  }
}

export const defaultRetryPolicy: RetryPolicy = { initialMs: 200, maxMs: 30_000 };

export const keyedDefaults = { maxPendingPerPartition: 10_000, maxPendingBytesPerPartition: 64 * 1024 * 1024, maxBatch: 500 } as const;

/** Keyed options with every default filled in. */
export type ResolvedKeyedOptions = Required<KeyedConsumeOptions>;

/** Which mode a consume() call asks for; throws when it names neither or both, or a bound is not a positive integer. */
export function consumeMode(
  options: ConsumeOptions,
):
  | { readonly handler: (record: BusRecord) => Promise<void>; readonly keyed?: undefined }
  | { readonly handler?: undefined; readonly keyed: ResolvedKeyedOptions } {
  const { handler, keyed } = options;
  if ((handler === undefined) === (keyed === undefined)) throw new TypeError("consume() takes exactly one of handler and keyed");
  if (handler !== undefined) return { handler };
  const resolved = { ...keyedDefaults, ...stripUndefined(keyed!) } as ResolvedKeyedOptions;
  for (const name of ["maxPendingPerPartition", "maxPendingBytesPerPartition", "maxBatch"] as const) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`keyed.${name} must be a positive integer, got ${value}`);
  }
  if (typeof resolved.handler !== "function") throw new TypeError("keyed.handler must be a function");
  return { keyed: resolved };
}

function stripUndefined<T extends object>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as Partial<T>;
}

export function toBuffer(value: Buffer | string): Buffer {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}
