// The Kafka bus on kafkajs 2.2.4: an idempotent producer with acks=-1 that batches concurrent
// publishes, and consumer groups with auto-commit off. Per-record mode (eachMessage) commits once
// per record after its handler resolved; keyed mode (eachBatch) feeds one KeyedDispatcher per
// owned partition and commits its contiguous completed prefix.
import kafkajs from "kafkajs";
import { kafkaLogCreator } from "./kafkaLog.js";
import { partitionForKey, partitionKey } from "../partition.js";
import { Interrupter, interrupted } from "../interrupter.js";
import { KeyedDispatcher } from "../keyedDispatcher.js";
import { retryDelay } from "../retry.js";
import {
  BusClosedError,
  BusError,
  BusUnavailableError,
  UnknownTopicError,
  consumeMode,
  defaultRetryPolicy,
  stderrErrorLog,
  toBuffer,
  type Bus,
  type BusConsumer,
  type BusLog,
  type BusRecord,
  type ConsumeOptions,
  type OutgoingMessage,
  type ResolvedKeyedOptions,
  type TopicSpec,
} from "../bus.js";

const { Kafka, logLevel } = kafkajs;

export interface KafkaBusOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly log?: BusLog;
  /** A member silent this long is dropped from its group (broker minimum 6000). Default 10000. */
  readonly sessionTimeoutMs?: number;
  /** Default 1000. */
  readonly heartbeatIntervalMs?: number;
  /** Longest fetch long-poll; also bounds how fast an idle member notices a rebalance. Default 1000. */
  readonly maxWaitTimeMs?: number;
  /** How long consume() waits for the group join. Default 60000. */
  readonly joinTimeoutMs?: number;
  /** Publishes arriving within this window share one produce request. Default 2. */
  readonly lingerMs?: number;
  /**
   * Largest estimated size of one shared produce request. Publishes are not split, and one at
   * least this large goes alone, so a too-large message fails only its own publish. Default 512 KiB
   * (below the broker's default 1 MB record-batch limit).
   */
  readonly maxBatchBytes?: number;
}

export class ConsumerJoinError extends BusError {
  override readonly name = "ConsumerJoinError";
}

export async function openKafkaBus(options: KafkaBusOptions): Promise<Bus> {
  return new KafkaBus(options);
}

class KafkaBus implements Bus {
  private closed = false;
  private readonly kafka: kafkajs.Kafka;
  private readonly log: BusLog;
  private readonly producer: Lazy<kafkajs.Producer>;
  private readonly produce: ProduceBatcher;
  private readonly admin: Lazy<kafkajs.Admin>;
  private readonly knownTopics = new Set<string>();
  private readonly consumers = new Set<KafkaConsumer>();

  constructor(private readonly options: KafkaBusOptions) {
    this.log = options.log ?? stderrErrorLog;
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: [...options.brokers],
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(this.log),
    });
    const producer = this.kafka.producer({
      idempotent: true,
      // One request in flight keeps concurrent publishes in order across retries.
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // Bounded so a dead cluster fails publish (the caller decides) instead of hanging forever.
      retry: { retries: 8 },
      createPartitioner:
        () =>
        ({ partitionMetadata, message }) =>
          partitionForKey(String(message.key), partitionMetadata.length),
    });
    this.producer = new Lazy(producer);
    this.produce = new ProduceBatcher(
      async (topicMessages) => {
        await (await this.producer.connected()).sendBatch({ acks: -1, topicMessages });
      },
      nonNegative("lingerMs", options.lingerMs ?? 2),
      nonNegative("maxBatchBytes", options.maxBatchBytes ?? 512 * 1024),
      this.log,
    );
    this.admin = new Lazy(this.kafka.admin());
  }

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    this.assertOpen();
    for (const { name, partitions } of topics) {
      if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`topic ${name}: partitions must be a positive integer`);
    }
    const admin = await this.admin.connected();
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter(({ name }) => !existing.has(name));
    if (missing.length > 0) {
      // Resolves false when another node created them first, which is just as good.
      await admin.createTopics({
        topics: missing.map(({ name, partitions }) => ({ topic: name, numPartitions: partitions })),
        waitForLeaders: false,
      });
      await waitForLeaders(
        admin,
        missing.map(({ name }) => name),
      );
    }
    for (const { name } of topics) this.knownTopics.add(name);
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    if (messages.length === 0) return;
    try {
      await this.assertTopics([topic]);
      this.assertOpen();
      await this.produce.publish(
        topic,
        messages.map((message) => ({
          key: message.key,
          value: toBuffer(message.value),
          headers: { ...message.headers },
        })),
      );
    } catch (error) {
      throw unreachable(error) ? new BusUnavailableError(String((error as Error).message), { cause: error }) : error;
    }
  }

  async consume(options: ConsumeOptions): Promise<BusConsumer> {
    this.assertOpen();
    const mode = consumeMode(options);
    await this.assertTopics(options.topics);
    const startAt =
      options.fromBeginning === false ? await this.endsOfUncommitted(options.groupId, options.topics) : new Map<string, string>();
    const admin = () => this.admin.connected();
    const consumer = new KafkaConsumer(
      this.kafka,
      this.options,
      options,
      mode.keyed,
      startAt,
      this.log,
      async (topic) => (await admin()).fetchTopicOffsets(topic),
      // From the metadata (no leader needed, unlike the offsets): asked while the topic may still be electing one.
      async (topic) => (await (await admin()).fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions.length ?? 0,
    );
    this.consumers.add(consumer);
    try {
      if (mode.keyed) await consumer.learnPartitionCounts();
      await consumer.start();
    } catch (error) {
      this.consumers.delete(consumer);
      await consumer.abandon();
      throw error;
    }
    return {
      stop: async () => {
        await consumer.stop();
        this.consumers.delete(consumer);
      },
    };
  }

  offerLocally(groupId: string, topic: string, message: OutgoingMessage, fallback: () => void): boolean {
    if (this.closed) return false;
    for (const consumer of this.consumers) if (consumer.offerLocally(groupId, topic, message, fallback)) return true;
    return false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const consumers = [...this.consumers];
    this.consumers.clear();
    this.produce.close();
    await Promise.all([
      ...consumers.map((consumer) => consumer.abandon()),
      this.producer.client.disconnect(),
      this.admin.client.disconnect(),
    ]);
  }

  /**
   * kafkajs fixes "latest" only at its first fetch, after the join, so a message published just
   * after consume() resolved could be skipped. The end offsets of the partitions the group never
   * committed on are taken now, before the join, and the consumer seeks there once it joined.
   */
  private async endsOfUncommitted(groupId: string, topics: readonly string[]): Promise<Map<string, string>> {
    const admin = await this.admin.connected();
    const starts = new Map<string, string>();
    for (const { topic, partitions } of await admin.fetchOffsets({ groupId, topics: [...topics] })) {
      const uncommitted = new Set(partitions.filter(({ offset }) => offset === "-1").map(({ partition }) => partition));
      if (uncommitted.size === 0) continue;
      for (const { partition, high } of await admin.fetchTopicOffsets(topic)) {
        if (uncommitted.has(partition)) starts.set(partitionKey(topic, partition), high);
      }
    }
    return starts;
  }

  private async assertTopics(topics: readonly string[]): Promise<void> {
    const unknown = topics.filter((topic) => !this.knownTopics.has(topic));
    if (unknown.length === 0) return;
    const existing = new Set(await (await this.admin.connected()).listTopics());
    for (const topic of unknown) {
      if (!existing.has(topic)) throw new UnknownTopicError(topic);
      this.knownTopics.add(topic);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new BusClosedError();
  }
}

interface QueuedPublish {
  readonly topic: string;
  readonly messages: kafkajs.Message[];
  readonly bytes: number;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Produce batching: publishes arriving within `lingerMs` go out together in one sendBatch, and
 * each caller's promise settles with the request that carried its messages. One request is in
 * flight at a time (publishes queued meanwhile form the next one, sent as soon as it returns),
 * and the queue keeps call order, so per-key order holds across callers as it did with one
 * request per publish.
 */
class ProduceBatcher {
  private queue: QueuedPublish[] = [];
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private sending = false;
  private closed = false;

  constructor(
    private readonly send: (topicMessages: kafkajs.TopicMessages[]) => Promise<void>,
    private readonly lingerMs: number,
    private readonly maxBatchBytes: number,
    private readonly log: BusLog,
  ) {}

  publish(topic: string, messages: kafkajs.Message[]): Promise<void> {
    if (this.closed) return Promise.reject(new BusClosedError());
    return new Promise((resolve, reject) => {
      const bytes = messages.reduce((sum, message) => sum + estimatedSize(message), 0);
      this.queue.push({ topic, messages, bytes, resolve, reject });
      this.queuedBytes += bytes;
      this.schedule();
    });
  }

  /** Publishes not sent yet reject; a request in flight settles on its own. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const queued = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    for (const publish of queued) publish.reject(new BusClosedError());
  }

  private schedule(): void {
    if (this.sending) return;
    if (this.queuedBytes >= this.maxBatchBytes) {
      // A full request waits for nothing more.
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.flush();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.lingerMs);
  }

  private async flush(): Promise<void> {
    if (this.sending || this.queue.length === 0) return;
    this.sending = true;
    const batch = this.take();
    const byTopic = new Map<string, kafkajs.Message[]>();
    for (const { topic, messages } of batch) {
      const list = byTopic.get(topic);
      if (list) list.push(...messages);
      else byTopic.set(topic, [...messages]);
    }
    this.log({
      level: "debug",
      message: `produce request carrying ${batch.length} publishes`,
      fields: { publishes: batch.length, messages: batch.reduce((sum, { messages }) => sum + messages.length, 0) },
    });
    try {
      await this.send([...byTopic].map(([topic, messages]) => ({ topic, messages })));
      for (const publish of batch) publish.resolve();
    } catch (error) {
      for (const publish of batch) publish.reject(error);
    } finally {
      this.sending = false;
    }
    // What queued up meanwhile has waited long enough: it goes out at once.
    if (this.queue.length > 0) void this.flush();
  }

  /** The oldest publishes up to maxBatchBytes; at least one, and one at least that large alone. */
  private take(): QueuedPublish[] {
    let count = 1;
    let bytes = this.queue[0].bytes;
    if (bytes < this.maxBatchBytes) {
      while (count < this.queue.length && bytes + this.queue[count].bytes <= this.maxBatchBytes) bytes += this.queue[count++].bytes;
    }
    const batch = this.queue.splice(0, count);
    this.queuedBytes -= bytes;
    return batch;
  }
}

/** Bytes a message adds to a produce request, roughly (record overhead included). */
function estimatedSize(message: kafkajs.Message): number {
  let size =
    70 +
    Buffer.byteLength(String(message.key ?? "")) +
    (Buffer.isBuffer(message.value) ? message.value.length : Buffer.byteLength(String(message.value ?? "")));
  for (const [name, value] of Object.entries(message.headers ?? {}))
    size += Buffer.byteLength(name) + Buffer.byteLength(String(value ?? ""));
  return size;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a non-negative number, got ${value}`);
  return value;
}

/** A kafkajs client connected on first use; a failed connect is tried again by the next use. */
class Lazy<T extends { connect(): Promise<void> }> {
  private connecting: Promise<void> | undefined;

  constructor(readonly client: T) {}

  async connected(): Promise<T> {
    this.connecting ??= this.client.connect().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    await this.connecting;
    return this.client;
  }
}

/** How often a keyed consumer asks for its partitions' ends (the lag of a paused partition). */
const END_REFRESH_MS = 5000;

class KafkaConsumer {
  /** The current kafkajs consumer; replaced when kafkajs gives one up. */
  private consumer: kafkajs.Consumer;
  private joinedOnce = false;
  private readonly stopped = new Interrupter();
  private readonly abandoned = new Interrupter();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly heartbeatIntervalMs: number;
  /** Keyed mode: one dispatcher per partition this member owns, by partitionKey. */
  private readonly dispatchers = new Map<string, KeyedDispatcher>();
  /**
   * Keyed mode: calls still running on partitions this member lost, by partitionKey, then key. If a
   * partition comes back, its keys wait for these, so a key never has two calls here at once.
   */
  private readonly leftovers = new Map<string, Map<string, Promise<unknown>>>();
  /** The member id of the last join; another one means this member was out of the group meanwhile. */
  private memberId: string | undefined;

  constructor(
    private readonly kafka: kafkajs.Kafka,
    private readonly bus: KafkaBusOptions,
    private readonly options: ConsumeOptions,
    /** Keyed mode's options, or undefined in per-record mode. */
    private readonly keyed: ResolvedKeyedOptions | undefined,
    /** Offsets to start from on the first join, by partitionKey (see endsOfUncommitted). */
    private readonly startAt: ReadonlyMap<string, string>,
    private readonly log: BusLog,
    /** The end (high watermark) of each partition of a topic, asked of the cluster. */
    private readonly topicEnds: (topic: string) => Promise<{ partition: number; high: string }[]>,
    /** How many partitions a topic has, asked of the cluster. */
    private readonly partitionCount: (topic: string) => Promise<number>,
  ) {
    this.heartbeatIntervalMs = bus.heartbeatIntervalMs ?? 1000;
    this.consumer = this.newConsumer();
    if (keyed) {
      // A paused partition is not fetched, so its end is asked for now and then too (for the lag).
      this.endsTimer = setInterval(() => void this.refreshEnds(), END_REFRESH_MS);
      this.endsTimer.unref();
    }
  }

  /** Keyed mode: each partition's log end as last seen (a fetch's high watermark, or asked for), by partitionKey. */
  private readonly ends = new Map<string, bigint>();
  private readonly endsTimer: NodeJS.Timeout | undefined;

  /** Keyed mode: the partitions of the last assignment, by partitionKey. */
  private owned: ReadonlySet<string> = new Set();
  /** Keyed mode: each subscribed topic's partition count, as last asked of the cluster (for offerLocally). */
  private readonly partitionCounts = new Map<string, number>();

  /**
   * Keyed mode: asks the cluster how many partitions each subscribed topic has. Without an answer
   * nothing is offered locally on the topic until the next refresh of the ends sets it.
   */
  async learnPartitionCounts(): Promise<void> {
    for (const topic of this.options.topics) {
      try {
        this.partitionCounts.set(topic, await this.partitionCount(topic));
      } catch (error) {
        this.log({ level: "warn", message: `could not learn the partitions of ${topic}; requests to it go over the bus for now`, error });
      }
    }
  }

  /**
   * See Bus.offerLocally: to this member's dispatcher of the message's partition, if it is of
   * `groupId` and was assigned that partition (made now if nothing was fetched from it yet).
   */
  offerLocally(groupId: string, topic: string, message: OutgoingMessage, fallback: () => void): boolean {
    if (!this.keyed || groupId !== this.options.groupId || this.stopped.fired) return false;
    const count = this.partitionCounts.get(topic);
    if (count === undefined || count < 1) return false;
    const partition = partitionForKey(message.key, count);
    if (!this.owned.has(partitionKey(topic, partition))) return false;
    return this.dispatcherFor(topic, partition).offerLocal(message, fallback);
  }

  private async refreshEnds(): Promise<void> {
    // partitionKey is "<partition>:<topic>".
    const topics = new Set([...this.dispatchers.keys()].map((key) => key.slice(key.indexOf(":") + 1)));
    for (const topic of topics) {
      try {
        const ends = await this.topicEnds(topic);
        // A topic given more partitions re-keys its records: local offers follow the producer's count.
        this.partitionCounts.set(topic, ends.length);
        for (const { partition, high } of ends) this.ends.set(partitionKey(topic, partition), BigInt(high));
      } catch {
        // Only the lag metric is late; the next fetch or refresh sets it.
      }
    }
  }

  async start(): Promise<void> {
    const consumer = this.consumer;
    const joined = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ConsumerJoinError(`group ${this.options.groupId}: no join within ${this.bus.joinTimeoutMs ?? 60_000} ms`)),
        this.bus.joinTimeoutMs ?? 60_000,
      );
      const offJoin = consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        // Synchronous, so the seek is in place before the first fetch.
        for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
          for (const partition of partitions) {
            const offset = this.startAt.get(partitionKey(topic, partition));
            if (offset !== undefined) consumer.seek({ topic, partition, offset });
          }
        }
        clearTimeout(timer);
        offJoin();
        offCrash();
        this.joinedOnce = true;
        resolve();
      });
      const offCrash = consumer.on(consumer.events.CRASH, ({ payload }) => {
        clearTimeout(timer);
        offJoin();
        offCrash();
        reject(payload.error);
      });
    });
    await this.run(consumer);
    await joined;
  }

  /** Graceful: finish running handlers and their commits, then leave the group. */
  async stop(): Promise<void> {
    clearInterval(this.endsTimer);
    this.stopped.fire();
    await Promise.all([...this.inFlight, ...[...this.dispatchers.values()].map((dispatcher) => dispatcher.stop())]);
    await this.consumer.disconnect();
  }

  /** Leave now; running handlers stay uncommitted and are redelivered to the group. */
  async abandon(): Promise<void> {
    clearInterval(this.endsTimer);
    this.stopped.fire();
    this.abandoned.fire();
    for (const dispatcher of this.dispatchers.values()) dispatcher.abandon();
    this.dispatchers.clear();
    await this.consumer.disconnect();
  }

  private newConsumer(): kafkajs.Consumer {
    const consumer = this.kafka.consumer({
      groupId: this.options.groupId,
      sessionTimeout: this.bus.sessionTimeoutMs ?? 10_000,
      heartbeatInterval: this.heartbeatIntervalMs,
      maxWaitTimeInMs: this.bus.maxWaitTimeMs ?? 1000,
      allowAutoTopicCreation: false,
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      const replace = !payload.restart && this.joinedOnce && !this.stopped.fired && consumer === this.consumer;
      this.log({
        level: "error",
        message: `consumer of group ${payload.groupId} crashed; ${payload.restart ? "kafkajs restarts it" : replace ? "starting a new one" : "not restarted"}`,
        error: payload.error,
      });
      if (replace) void this.replace();
    });
    if (this.keyed)
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => this.assigned(consumer, payload.memberId, payload.memberAssignment));
    return consumer;
  }

  /** kafkajs gives up on non-retriable errors (e.g. this member was evicted): start over. */
  private async replace(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (!(await this.stopped.pause(retryDelay(attempt, defaultRetryPolicy)))) return;
      const consumer = this.newConsumer();
      this.consumer = consumer;
      try {
        await this.run(consumer);
        if (this.stopped.fired) await consumer.disconnect();
        return;
      } catch (error) {
        this.log({ level: "error", message: `could not restart the consumer of group ${this.options.groupId}`, error });
        await consumer.disconnect().catch(() => undefined);
      }
    }
  }

  private async run(consumer: kafkajs.Consumer): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topics: [...this.options.topics], fromBeginning: this.options.fromBeginning ?? true });
    if (this.keyed) {
      // eachBatch only feeds the dispatcher and returns: a call blocking there would stop kafkajs's
      // fetcher (it waits for every batch of a fetch) and so every other partition of the broker.
      // A full dispatcher pauses its partition instead, and kafkajs keeps heartbeating in its fetch loop.
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: (payload) => this.eachBatch(consumer, payload),
      });
      return;
    }
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: this.options.partitionsConcurrently ?? 1,
      eachMessage: (payload) => this.eachMessage(consumer, payload),
    });
  }

  /**
   * Keyed mode, on every join (kafkajs's eager protocol: all partitions are revoked, then assigned).
   * A partition kept by the same member keeps its dispatcher: kafkajs fetches again from the
   * committed offset and the dispatcher skips what it holds. A lost partition's dispatcher is
   * abandoned: its running calls may finish but never commit, and the new owner gets those
   * records again from the committed offset. After a new member id (evicted, or a replaced
   * kafkajs consumer) nothing is kept, since another member may have owned anything meanwhile.
   */
  private assigned(consumer: kafkajs.Consumer, memberId: string, assignment: kafkajs.IMemberAssignment): void {
    if (consumer !== this.consumer) return;
    const sameMember = memberId === this.memberId;
    this.memberId = memberId;
    const owned = new Set(Object.entries(assignment).flatMap(([topic, partitions]) => partitions.map((p) => partitionKey(topic, p))));
    this.owned = owned;
    for (const [key, dispatcher] of this.dispatchers) {
      if (sameMember && owned.has(key)) {
        // A commit refused while the group rebalanced goes through now.
        dispatcher.commitSoon();
        continue;
      }
      this.revoke(key, dispatcher);
    }
    // kafkajs keeps a pause across rebalances; a partition without a dispatcher must be read again.
    const unpause = Object.entries(assignment)
      .map(([topic, partitions]) => ({ topic, partitions: partitions.filter((p) => !this.dispatchers.has(partitionKey(topic, p))) }))
      .filter(({ partitions }) => partitions.length > 0);
    if (unpause.length > 0) consumer.resume(unpause);
  }

  private revoke(key: string, dispatcher: KeyedDispatcher): void {
    const busy = dispatcher.busyKeys();
    dispatcher.abandon();
    this.dispatchers.delete(key);
    if (busy.size === 0) return;
    let leftover = this.leftovers.get(key);
    if (!leftover) this.leftovers.set(key, (leftover = new Map<string, Promise<void>>()));
    const calls = leftover;
    for (const [recordKey, running] of busy) {
      calls.set(recordKey, running);
      void running.then(() => {
        if (calls.get(recordKey) === running) calls.delete(recordKey);
        if (calls.size === 0 && this.leftovers.get(key) === calls) this.leftovers.delete(key);
      });
    }
  }

  private dispatcherFor(topic: string, partition: number): KeyedDispatcher {
    const key = partitionKey(topic, partition);
    let dispatcher = this.dispatchers.get(key);
    if (dispatcher) return dispatcher;
    const leftover = this.leftovers.get(key);
    dispatcher = new KeyedDispatcher({
      groupId: this.options.groupId,
      topic,
      partition,
      keyed: this.keyed!,
      retry: this.options.retry ?? defaultRetryPolicy,
      log: this.log,
      ...(leftover ? { busyKeys: new Map(leftover) } : {}),
      // Through the current kafkajs consumer, with its generation; a failure (e.g. a rebalance) is
      // tried again by the dispatcher, and a lost partition's dispatcher is abandoned and stops committing.
      commit: async (nextOffset) => {
        await this.consumer.commitOffsets([{ topic, partition, offset: nextOffset.toString() }]);
      },
      logEnd: () => this.ends.get(key),
      onCapacity: () => {
        try {
          this.consumer.resume([{ topic, partitions: [partition] }]);
        } catch (error) {
          // Only before a replaced consumer ran; its join resumes every partition without a dispatcher.
          this.log({ level: "warn", message: `could not resume ${topic}[${partition}] for group ${this.options.groupId}`, error });
        }
      },
    });
    this.dispatchers.set(key, dispatcher);
    return dispatcher;
  }

  private async eachBatch(
    consumer: kafkajs.Consumer,
    // kafkajs hands these over as closures over its own state, not as methods.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    { batch, resolveOffset, pause, isRunning, isStale }: kafkajs.EachBatchPayload,
  ): Promise<void> {
    // A batch fetched before a seek, or by a consumer already replaced, is read again properly later.
    if (consumer !== this.consumer || !isRunning() || isStale()) return;
    if (this.stopped.fired) {
      // Left unresolved for the next owner; paused so kafkajs does not fetch it again and again.
      pause();
      return;
    }
    const dispatcher = this.dispatcherFor(batch.topic, batch.partition);
    this.ends.set(partitionKey(batch.topic, batch.partition), BigInt(batch.highWatermark));
    dispatcher.offer(
      batch.messages.map((message) => toRecord(batch.topic, batch.partition, message)),
      BigInt(batch.lastOffset()) + 1n,
    );
    // The fetch position, not the commit: kafkajs fetches next from the last resolved offset.
    const position = dispatcher.position;
    if (position !== undefined) resolveOffset((position - 1n).toString());
    if (dispatcher.paused) pause();
  }

  private eachMessage(consumer: kafkajs.Consumer, payload: kafkajs.EachMessagePayload): Promise<void> {
    // Records fetched after a stop are left uncommitted for the next owner.
    if (this.stopped.fired) return Promise.resolve();
    const handled = this.handle(consumer, payload);
    this.inFlight.add(handled);
    return handled.finally(() => this.inFlight.delete(handled));
  }

  // kafkajs's heartbeat is a closure over its own state, not a method.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  private async handle(consumer: kafkajs.Consumer, { topic, partition, message, heartbeat }: kafkajs.EachMessagePayload): Promise<void> {
    const record = toRecord(topic, partition, message);
    // kafkajs heartbeats only between records: keep the membership alive while a handler runs
    // or waits to retry, and notice a rebalance so a retry streak gives the partition up.
    let rebalance: unknown;
    const beating = setInterval(() => {
      heartbeat().catch((error: unknown) => {
        if (isRebalance(error)) rebalance ??= error;
      });
    }, this.heartbeatIntervalMs);
    try {
      for (let attempt = 1; ; attempt++) {
        let failed = false;
        let failure: unknown;
        try {
          const result = await this.abandoned.guard(Promise.resolve().then(() => this.options.handler!(record)));
          if (result === interrupted) return;
        } catch (error) {
          failed = true;
          failure = error;
        }
        if (!failed) {
          // A failed commit (e.g. the group rebalanced) goes to kafkajs, which rejoins; the record
          // stays uncommitted and is delivered again.
          await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
          return;
        }
        this.log({
          level: "error",
          message: `handler of group ${this.options.groupId} failed on ${topic}[${partition}]@${message.offset}, attempt ${attempt}; retrying`,
          error: failure,
          fields: { groupId: this.options.groupId, topic, partition, offset: message.offset, attempt },
        });
        if (rebalance) throw asError(rebalance);
        if (!(await this.stopped.pause(retryDelay(attempt, this.options.retry ?? defaultRetryPolicy)))) return;
        if (rebalance) throw asError(rebalance);
      }
    } finally {
      clearInterval(beating);
    }
  }
}

const rebalanceErrors = new Set(["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "NOT_COORDINATOR_FOR_GROUP", "UNKNOWN_MEMBER_ID"]);

/** The group moved on: this member must rejoin, and its partitions may belong to another now. */
function isRebalance(error: unknown): boolean {
  return rebalanceErrors.has((error as { type?: string } | undefined)?.type ?? "");
}

/**
 * Waits until every partition of new topics has a leader. kafkajs's own `waitForLeaders` gives up
 * when a KRaft broker has not yet heard of the topic (UNKNOWN_TOPIC_OR_PARTITION right after its
 * creation), which failed node starts; here every retriable metadata error means "not yet".
 */
async function waitForLeaders(admin: kafkajs.Admin, topics: readonly string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const metadata = await admin.fetchTopicMetadata({ topics: [...topics] });
      const led = metadata.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      if (led && metadata.topics.length === topics.length) return;
    } catch (error) {
      if (!(error as { retriable?: boolean }).retriable || Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new BusError(`topics ${topics.join(", ")} have no leader after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** kafkajs errors are Errors; this keeps the type honest for anything else. */
const asError = (value: unknown): Error => (value instanceof Error ? value : new Error("kafkajs reported a rebalance"));

function toRecord(topic: string, partition: number, message: kafkajs.KafkaMessage): BusRecord {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) headers[name] = first.toString();
  }
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString("utf8") ?? "",
    value: message.value ?? Buffer.alloc(0),
    headers,
    timestamp: Number(message.timestamp),
  };
}

/**
 * Whether kafkajs gave up for want of a broker (down, restarting, no leader yet): its retries ran
 * out on a retriable error, or a connection failed. Anything else (a message too large, a topic
 * refused) is a real failure.
 */
function unreachable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (!(e instanceof kafkajs.KafkaJSError)) return false;
    if (e.retriable || e.name === "KafkaJSNumberOfRetriesExceeded" || e instanceof kafkajs.KafkaJSConnectionError) return true;
    if (e.cause === e) return false;
  }
  return false;
}
