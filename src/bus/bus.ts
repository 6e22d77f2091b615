// The message bus port. The embedded SQLite log and the Kafka adapter implement exactly this
// and pass the shared contract suite in test/bus/contract.ts.

export interface OutgoingMessage {
  /** Hashed to a partition (Kafka's murmur2), so messages with one key keep their order. */
  readonly key: string;
  readonly value: Buffer | string;
  readonly headers?: Readonly<Record<string, string>>;
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

export interface ConsumeOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  /**
   * Called once per record, in offset order within a partition. The offset is committed only
   * after the returned promise resolved; a rejection is retried (see `retry`), never skipped.
   */
  readonly handler: (record: BusRecord) => Promise<void>;
  /** Where a group with no committed offset starts: the oldest retained message (default) or the end. */
  readonly fromBeginning?: boolean;
  /** How many partitions this consumer handles at once (default 1). */
  readonly partitionsConcurrently?: number;
  /** Defaults to { initialMs: 200, maxMs: 30_000 }. */
  readonly retry?: RetryPolicy;
}

export interface BusConsumer {
  /**
   * Leaves the group gracefully: no new records, waits for running handlers and their commits.
   * A record waiting for a retry is given up uncommitted (another member gets it).
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

export class UnknownTopicError extends BusError {
  override readonly name = "UnknownTopicError";
  constructor(readonly topic: string) {
    super(`unknown topic ${JSON.stringify(topic)}: create it with ensureTopics first`);
  }
}

export const defaultRetryPolicy: RetryPolicy = { initialMs: 200, maxMs: 30_000 };

export function toBuffer(value: Buffer | string): Buffer {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}
