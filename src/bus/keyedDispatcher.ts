// Keyed consumption of one topic partition, shared by both adapters: the adapter feeds records
// in offset order and performs the commits; this module decides which key runs next, bounds what
// is held, retries rejected batches and tracks the committable offset (the contiguous completed
// prefix). See KeyedConsumeOptions in bus.ts for the semantics it implements.
import { Interrupter, interrupted } from "./interrupter.js";
import { retryDelay } from "./retry.js";
import { toBuffer, type BusLog, type BusRecord, type OutgoingMessage, type ResolvedKeyedOptions, type RetryPolicy } from "./bus.js";

export interface KeyedDispatcherOptions {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  readonly keyed: ResolvedKeyedOptions;
  readonly retry: RetryPolicy;
  readonly log: BusLog;
  /** The committed offset, if known; records below it are skipped. Default: the first offered record's offset. */
  readonly start?: bigint;
  /** Persists "every record before nextOffset is done". Called one at a time, with increasing offsets. */
  readonly commit: (nextOffset: bigint) => Promise<void>;
  /** Reading may go on: an offer had reached the bounds, and completions freed room since. */
  readonly onCapacity: () => void;
  /** Keys whose calls from a predecessor on this partition still run (Kafka: before a rebalance); they wait for those. */
  readonly busyKeys?: ReadonlyMap<string, Promise<unknown>>;
  /** How long completions are gathered into one commit. Default 0 (the next timer turn). */
  readonly commitDelayMs?: number;
  /** The partition's log end offset as the adapter last knew it (undefined: not known yet), for the lag. */
  readonly logEnd?: () => bigint | undefined;
}

interface Entry {
  /** -1 for a record handed over locally (it has no place in the partition). */
  readonly offset: bigint;
  readonly bytes: number;
  /** Dropped once done, so completed records past a stuck one do not keep their values alive. */
  record: BusRecord | undefined;
  done: boolean;
  /** A local record's way back to the log when this dispatcher stops before it is done (see offerLocal). */
  readonly fallback?: () => void;
}

interface KeyState {
  /** Read, not yet handed over, in offset order. */
  readonly waiting: Entry[];
  /** A call of this key runs or waits to retry. */
  running: boolean;
  /** A predecessor's call of this key that has not settled yet. */
  blockedBy: Promise<unknown> | undefined;
  /** The running call waits for records of its key to arrive (see `arrived`). */
  wakers: (() => void)[];
}

/**
 * What one partition holds right now: records read and not yet committed past, and records handed
 * over locally and not done (the partition's local backlog).
 */
export interface PartitionBacklog {
  readonly groupId: string;
  readonly topic: string;
  readonly partition: number;
  readonly records: number;
  readonly bytes: number;
  /**
   * The group's lag on the partition: records between its committed offset and the end of the
   * log, fetched or not (undefined until the adapter knows the end).
   */
  readonly lag: number | undefined;
}

/** The dispatchers of this process that read partitions now (both adapters), for metrics. */
const live = new Set<KeyedDispatcher>();

/** Each partition this process consumes in keyed mode, with its backlog. */
export function partitionBacklogs(): PartitionBacklog[] {
  return [...live].map((d) => d.backlog);
}

export class KeyedDispatcher {
  /** No new batches; retry waits give up. */
  private readonly stopping = new Interrupter();
  /** Running calls are abandoned: their outcome is ignored and nothing more is committed. */
  private readonly abandoned = new Interrupter();
  private readonly keys = new Map<string, KeyState>();
  /** Every record read and not yet covered by the completed prefix, in offset order, from `head`. */
  private entries: Entry[] = [];
  private head = 0;
  private pendingBytesCount = 0;
  private nextOffset: bigint | undefined;
  private committed: bigint | undefined;
  /** An offer found the bounds reached; onCapacity is owed once room frees. */
  private full = false;
  private readonly calls = new Set<Promise<void>>();
  /** The handler promise of each key whose handler is running now (for a successor's busyKeys). */
  private readonly inHandler = new Map<string, Promise<unknown>>();
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> | undefined;
  private commitFailures = 0;
  private stopped: Promise<void> | undefined;
  /** Records handed over locally and not done yet (they are not part of the committed prefix). */
  private readonly localEntries = new Set<Entry>();

  constructor(private readonly options: KeyedDispatcherOptions) {
    live.add(this);
    if (options.start !== undefined) this.nextOffset = this.committed = options.start;
    for (const [key, running] of options.busyKeys ?? []) {
      const state = this.keyState(key);
      state.blockedBy = running;
      const unblock = (): void => {
        state.blockedBy = undefined;
        this.dispatch(key);
      };
      running.then(unblock, unblock);
    }
  }

  /** The next offset to read: every record below it was taken (or was already done). */
  get position(): bigint | undefined {
    return this.nextOffset;
  }

  /** Records read and not yet covered by the completed prefix. */
  get pending(): number {
    return this.entries.length - this.head;
  }

  get pendingBytes(): number {
    return this.pendingBytesCount;
  }

  get backlog(): PartitionBacklog {
    const { groupId, topic, partition } = this.options;
    const end = this.options.logEnd?.();
    const from = this.committed ?? this.committable;
    const lag = end === undefined || from === undefined ? undefined : Number(end > from ? end - from : 0n);
    let records = this.pending;
    let bytes = this.pendingBytesCount;
    for (const entry of this.localEntries) {
      records++;
      bytes += entry.bytes;
    }
    return { groupId, topic, partition, records, bytes, lag };
  }

  /** True while reading should pause (the bounds were reached); onCapacity ends it. */
  get paused(): boolean {
    return this.full;
  }

  /** How many more records the count bound admits now. */
  get room(): number {
    return Math.max(0, this.options.keyed.maxPendingPerPartition - this.pending);
  }

  /** The offset a commit now would store. */
  get committable(): bigint | undefined {
    return this.head < this.entries.length ? this.entries[this.head].offset : this.nextOffset;
  }

  /**
   * Takes records in offset order until the bounds are reached; records below `position` are
   * skipped (a re-fetch of what is held already). `endOffset` is where reading continues when every
   * record was taken (Kafka: after filtered control records). Returns how many records were
   * consumed from the front of `records`, skipped ones included.
   */
  offer(records: readonly BusRecord[], endOffset?: bigint): number {
    if (this.stopping.fired) return 0;
    const touched = new Set<string>();
    let consumed = 0;
    for (const record of records) {
      const offset = BigInt(record.offset);
      if (this.nextOffset !== undefined && offset < this.nextOffset) {
        consumed++;
        continue;
      }
      if (!this.fits(record.value.length)) {
        this.full = true;
        break;
      }
      const entry: Entry = { offset, bytes: record.value.length, record, done: false };
      this.entries.push(entry);
      this.pendingBytesCount += entry.bytes;
      this.committed ??= offset;
      this.nextOffset = offset + 1n;
      this.keyState(record.key).waiting.push(entry);
      touched.add(record.key);
      consumed++;
    }
    if (consumed === records.length && endOffset !== undefined && (this.nextOffset === undefined || endOffset > this.nextOffset)) {
      this.nextOffset = endOffset;
    }
    if (!this.hasRoom()) this.full = true;
    for (const key of touched) {
      this.wake(this.keys.get(key));
      this.dispatch(key);
    }
    return consumed;
  }

  /**
   * Takes a record that was not written to the partition (a request whose reply is its only
   * acknowledgment, from this process): it joins its key's queue behind what was read of the key
   * already, and is handled like the records around it, but plays no part in offsets or commits.
   * `fallback` is called (to publish it, so the partition's next owner runs it) when this dispatcher
   * stops gracefully before the record is done, or is abandoned (the partition was taken away)
   * before the record was handed to a call; a call that runs it may still answer it then. A crash
   * loses it with the process, as its requester. False, and nothing taken, once the dispatcher stops.
   */
  offerLocal(message: OutgoingMessage, fallback: () => void): boolean {
    if (this.stopping.fired) return false;
    const { topic, partition } = this.options;
    const record: BusRecord = {
      topic,
      partition,
      offset: "-1",
      key: message.key,
      value: toBuffer(message.value),
      headers: { ...message.headers },
      timestamp: Date.now(),
      local: true,
      ...(message.decoded !== undefined ? { decoded: message.decoded } : {}),
    };
    const entry: Entry = { offset: -1n, bytes: record.value.length, record, done: false, fallback };
    this.localEntries.add(entry);
    const state = this.keyState(record.key);
    state.waiting.push(entry);
    this.wake(state);
    this.dispatch(record.key);
    return true;
  }

  /** Keys whose handler is running now, each with a promise that settles when it does. */
  busyKeys(): Map<string, Promise<unknown>> {
    return new Map(this.inHandler);
  }

  /** Commits the completed prefix soon if it is ahead of the last commit (e.g. one failed during a rebalance). */
  commitSoon(): void {
    if (this.committing) return;
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    this.scheduleCommit(0);
  }

  /** Graceful: no new batches, retry waits give up, running calls finish, and what completed is committed. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      live.delete(this);
      this.stopping.fire();
      this.full = false;
      for (const state of this.keys.values()) this.wake(state);
      while (this.calls.size > 0) await Promise.all([...this.calls]);
      // Local records not done (still waiting, or in a call that failed) go back by their own way.
      const local = [...this.localEntries];
      this.localEntries.clear();
      for (const entry of local) entry.fallback?.();
      clearTimeout(this.commitTimer);
      this.commitTimer = undefined;
      await this.committing;
      // One last attempt; if it fails, the rest is redelivered (at-least-once).
      await this.flush();
    })();
    return this.stopped;
  }

  /** Like a crash: running calls are left to themselves, nothing more is committed. */
  abandon(): void {
    live.delete(this);
    this.abandoned.fire();
    this.stopping.fire();
    // Local records not handed to a call yet go back by their own way; a running call may still answer its own.
    const waiting = [...this.keys.values()].flatMap((state) => state.waiting.filter((entry) => entry.fallback));
    this.localEntries.clear();
    for (const entry of waiting) entry.fallback?.();
    this.full = false;
    for (const state of this.keys.values()) this.wake(state);
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
  }

  private keyState(key: string): KeyState {
    let state = this.keys.get(key);
    if (!state) this.keys.set(key, (state = { waiting: [], running: false, blockedBy: undefined, wakers: [] }));
    return state;
  }

  private wake(state: KeyState | undefined): void {
    if (state === undefined || state.wakers.length === 0) return;
    const wakers = state.wakers.splice(0);
    for (const wake of wakers) wake();
  }

  /** Resolves when records of the key arrive (to be taken with more()), or when the dispatcher stops. */
  private arrived(key: string): Promise<void> {
    const state = this.keys.get(key);
    if (!state || state.waiting.length > 0 || this.stopping.fired) return Promise.resolve();
    return new Promise((resolve) => state.wakers.push(resolve));
  }

  private fits(bytes: number): boolean {
    // One record always fits into an empty dispatcher, or a record larger than the byte bound would stall the partition.
    if (this.pending === 0) return true;
    return (
      this.pending < this.options.keyed.maxPendingPerPartition &&
      this.pendingBytesCount + bytes <= this.options.keyed.maxPendingBytesPerPartition
    );
  }

  private hasRoom(): boolean {
    return (
      this.pending < this.options.keyed.maxPendingPerPartition && this.pendingBytesCount < this.options.keyed.maxPendingBytesPerPartition
    );
  }

  /** Starts the next batch of `key` if it has waiting records and nothing of it runs. */
  private dispatch(key: string): void {
    const state = this.keys.get(key);
    if (!state || state.running || state.blockedBy || this.stopping.fired) return;
    if (state.waiting.length === 0) {
      this.keys.delete(key);
      return;
    }
    const batch = state.waiting.splice(0, this.options.keyed.maxBatch);
    state.running = true;
    const call: Promise<void> = this.run(key, batch).finally(() => {
      this.calls.delete(call);
      state.running = false;
      this.dispatch(key);
    });
    this.calls.add(call);
  }

  private async run(key: string, batch: Entry[]): Promise<void> {
    const { groupId, topic, partition } = this.options;
    for (let attempt = 1; ; attempt++) {
      let failure: unknown;
      // A retry hands over everything the failed call took, the records it pulled with more() included.
      const records = batch.map((entry) => entry.record!);
      try {
        const call = Promise.resolve().then(() =>
          this.options.keyed.handler(
            records,
            () => this.more(key, batch),
            () => this.arrived(key),
          ),
        );
        const settled = call.then(
          () => undefined,
          () => undefined,
        );
        this.inHandler.set(key, settled);
        void settled.then(() => {
          if (this.inHandler.get(key) === settled) this.inHandler.delete(key);
        });
        if ((await this.abandoned.guard(call)) === interrupted) return;
        if (this.abandoned.fired) return;
        this.complete(batch);
        return;
      } catch (error) {
        failure = error;
      }
      if (this.abandoned.fired) return;
      const first = batch.find((entry) => entry.offset >= 0n)?.offset.toString() ?? "local";
      this.options.log({
        level: "error",
        message: `keyed handler of group ${groupId} failed on ${topic}[${partition}]@${first} (${batch.length} records of one key), attempt ${attempt}; retrying`,
        error: failure,
        fields: { groupId, topic, partition, offset: first, records: batch.length, key, attempt },
      });
      if (!(await this.stopping.pause(retryDelay(attempt, this.options.retry)))) return;
    }
  }

  /** The key's records that arrived while its call runs, handed to that call (and so done or retried with it). */
  private more(key: string, batch: Entry[]): BusRecord[] {
    const state = this.keys.get(key);
    if (!state || this.stopping.fired || this.abandoned.fired || state.waiting.length === 0) return [];
    const taken = state.waiting.splice(0, this.options.keyed.maxBatch);
    batch.push(...taken);
    return taken.map((entry) => entry.record!);
  }

  private complete(batch: readonly Entry[]): void {
    for (const entry of batch) {
      entry.done = true;
      entry.record = undefined;
      if (entry.fallback) this.localEntries.delete(entry);
    }
    const before = this.head;
    while (this.head < this.entries.length && this.entries[this.head].done) {
      this.pendingBytesCount -= this.entries[this.head].bytes;
      this.head++;
    }
    if (this.head === before) return;
    // Compacted now and then rather than shifted per record, which would be quadratic.
    if (this.head >= 1024 && this.head * 2 >= this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    this.scheduleCommit(this.options.commitDelayMs ?? 0);
    if (this.full && this.hasRoom() && !this.stopping.fired) {
      this.full = false;
      this.options.onCapacity();
    }
  }

  private scheduleCommit(delayMs: number): void {
    if (this.commitTimer || this.committing || this.abandoned.fired) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      void this.flush();
    }, delayMs);
  }

  /** Commits the completed prefix if it moved; one commit at a time, so offsets only grow. */
  private flush(): Promise<void> {
    if (this.committing) return this.committing;
    const target = this.committable;
    if (this.abandoned.fired || target === undefined || (this.committed !== undefined && target <= this.committed))
      return Promise.resolve();
    const { groupId, topic, partition } = this.options;
    this.committing = (async () => {
      let failed = false;
      try {
        const result = await this.abandoned.guard(this.options.commit(target));
        if (result !== interrupted) {
          this.committed = target;
          this.commitFailures = 0;
        }
      } catch (error) {
        failed = true;
        this.commitFailures++;
        this.options.log({
          level: "warn",
          message: `commit of group ${groupId} on ${topic}[${partition}] at ${target} failed; ${this.stopping.fired ? "left uncommitted" : "trying again"}`,
          error,
          fields: { groupId, topic, partition, offset: target.toString(), attempt: this.commitFailures },
        });
      } finally {
        this.committing = undefined;
      }
      if (this.abandoned.fired) return;
      if (failed) {
        if (!this.stopping.fired) this.scheduleCommit(retryDelay(this.commitFailures, this.options.retry));
      } else if (this.committed !== undefined && this.committable !== undefined && this.committable > this.committed) {
        this.scheduleCommit(this.options.commitDelayMs ?? 0);
      }
    })();
    return this.committing;
  }
}
