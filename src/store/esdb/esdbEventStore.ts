import {
  BACKWARDS,
  END,
  ErrorType,
  FORWARDS,
  KurrentDBClient,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  ANY,
  excludeSystemEvents,
  isCommandError,
  type AllStreamSubscription,
  type AppendStreamState,
  type EventData,
  type ResolvedEvent,
  type AllStreamResolvedEvent,
} from "@kurrent/kurrentdb-client";
import { CommitSignal, runAllSubscription } from "../allSubscription.js";
import {
  WrongExpectedRevisionError,
  type AllSubscription,
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type SubscribeToAllOptions,
} from "../eventStore.js";
import { assertExpectedRevision, validateExpectedRevision } from "../expectedRevision.js";
import { EventStoreClosedError } from "../eventStoreClosedError.js";
import { findReplay, type StoredEventId } from "../idempotency.js";
import { proposeEvents, type ProposedEvent } from "../proposedEvent.js";

export interface EsdbEventStoreOptions {
  /** kurrentdb://host:2113?tls=false (the client's connection string). */
  readonly connectionString: string;
  /** How many of a stream's latest events are searched for the ids of a retried append. */
  readonly retryWindow?: number;
  /** A live server subscription wakes subscribers; this slow poll covers its outages. */
  readonly safetyPollMs?: number;
}

/** The server cannot tell us where an event is: it predates 22.6 (positions on stream reads). */
export class UnsupportedServerError extends Error {
  override readonly name = "UnsupportedServerError";
}

type StoredEvent = NonNullable<ResolvedEvent["event"]>;

const unknownPosition = 2n ** 64n - 1n;

function toRecordedEvent(event: StoredEvent): RecordedEvent {
  const commit = event.position?.commit;
  if (commit === undefined || commit === unknownPosition) {
    throw new UnsupportedServerError("the server does not report $all positions on stream reads (needs EventStoreDB 22.6+)");
  }
  const metadata = event.metadata;
  return {
    id: event.id,
    type: event.type,
    data: event.isJson ? event.data : Buffer.from(event.data).toString("base64"),
    metadata:
      metadata !== undefined && typeof metadata === "object" && !(metadata instanceof Uint8Array) && !Array.isArray(metadata)
        ? metadata
        : {},
    stream: event.streamId,
    revision: Number(event.revision),
    // The commit position: unique per event for every append made without explicit transactions.
    position: Number(commit),
    created: event.created.getTime(),
  };
}

function isError(error: unknown, type: ErrorType): boolean {
  return error instanceof Error && isCommandError(error) && error.type === type;
}

function streamStateOf(expected: ExpectedRevision): AppendStreamState {
  switch (expected) {
    case "any":
      return ANY;
    case "no_stream":
      return NO_STREAM;
    case "exists":
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
}

function toEventData(event: ProposedEvent): EventData {
  // The client's JSON type excludes bare numbers and null, but it sends JSON.stringify(data), which carries them.
  return {
    id: event.id,
    contentType: "application/json",
    type: event.type,
    data: event.data as object,
    metadata: event.metadata,
  } as EventData;
}

export function openEsdbEventStore(options: EsdbEventStoreOptions): EventStore {
  return new EsdbEventStore(KurrentDBClient.connectionString(options.connectionString), options);
}

/** Conflicting writers from other processes make an "any" append with ids re-check; this bounds the retries. */
const maxOptimisticRetries = 20;

class EsdbEventStore implements EventStore {
  private readonly signal = new CommitSignal();
  private readonly subscriptions = new Set<AllSubscription>();
  /** Appends to one stream from this process run one after another, so the id check and the append are not interleaved. */
  private readonly streamQueues = new Map<string, Promise<unknown>>();
  private liveFeed: AllStreamSubscription | undefined;
  private safetyPoll: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly client: KurrentDBClient,
    private readonly options: EsdbEventStoreOptions,
  ) {}

  append(stream: string, events: readonly NewEvent[], options?: AppendOptions): Promise<AppendResult> {
    try {
      this.assertOpen();
      const expectedRevision = options?.expectedRevision ?? "any";
      validateExpectedRevision(expectedRevision);
      const proposed = proposeEvents(events);
      const previous = this.streamQueues.get(stream) ?? Promise.resolve();
      const appended = previous.then(
        () => this.appendInTurn(stream, proposed, expectedRevision),
        () => this.appendInTurn(stream, proposed, expectedRevision),
      );
      const settled = appended.catch(() => {});
      this.streamQueues.set(stream, settled);
      void settled.then(() => {
        if (this.streamQueues.get(stream) === settled) this.streamQueues.delete(stream);
      });
      return appended;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private async appendInTurn(stream: string, events: readonly ProposedEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    // Fresh ids cannot be a retry: append straight away and let the server check the revision.
    if (!events.some((event) => event.idGiven)) return this.appendChecked(stream, events, expected);
    for (let attempt = 0; ; attempt++) {
      const { replay, revision } = await this.lookForRetry(stream, events, expected);
      if (replay !== undefined) return replay;
      assertExpectedRevision(stream, expected, revision);
      // Pin "any"/"exists" to the revision just searched, so no writer slips the same ids in between.
      const pinned: ExpectedRevision = typeof expected === "number" || expected === "no_stream" ? expected : (revision ?? "no_stream");
      try {
        return await this.appendChecked(stream, events, pinned);
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        // Someone appended meanwhile: perhaps this very append from another node. Look again.
        if (pinned === expected) {
          const again = await this.lookForRetry(stream, events, expected);
          if (again.replay !== undefined) return again.replay;
          throw new WrongExpectedRevisionError(stream, expected, error.actual);
        }
        if (attempt >= maxOptimisticRetries) throw error;
      }
    }
  }

  private async appendChecked(stream: string, events: readonly ProposedEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    try {
      const result = await this.client.appendToStream(stream, events.map(toEventData), { streamState: streamStateOf(expected) });
      this.signal.notify();
      if (result.position === undefined) throw new UnsupportedServerError("the server did not report the append's position");
      // The commit position of an implicit transaction is the log position of its last event.
      return { nextExpectedRevision: Number(result.nextExpectedRevision), position: Number(result.position.commit) };
    } catch (error) {
      if (isError(error, ErrorType.WRONG_EXPECTED_VERSION)) {
        const actual = (error as { actualState?: unknown }).actualState;
        throw new WrongExpectedRevisionError(stream, expected, typeof actual === "bigint" ? Number(actual) : undefined);
      }
      throw error;
    }
  }

  /**
   * The idempotency rule on a store without an id index: search the stream's latest events (and,
   * with a numeric expectation, the exact place a retry would have landed) for the append's ids.
   */
  private async lookForRetry(
    stream: string,
    events: readonly ProposedEvent[],
    expected: ExpectedRevision,
  ): Promise<{ replay: AppendResult | undefined; revision: number | undefined }> {
    const found = new Map<string, StoredEventId>();
    const remember = (recorded: readonly RecordedEvent[]) => {
      for (const event of recorded) found.set(event.id, { stream, revision: event.revision, position: event.position });
    };
    const latest = await this.readStream(stream, { direction: "backwards", maxCount: this.options.retryWindow ?? 1000 });
    remember(latest);
    if (typeof expected === "number" || expected === "no_stream") {
      const from = expected === "no_stream" ? 0 : expected + 1;
      remember(await this.readStream(stream, { fromRevision: from, maxCount: events.length }));
    }
    const revision = latest.length > 0 ? latest[0].revision : await this.streamRevision(stream);
    return { replay: findReplay(stream, events, (id) => found.get(id)), revision };
  }

  async readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const backwards = options?.direction === "backwards";
    if (options?.maxCount === 0) return [];
    const recorded: RecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(stream, {
        direction: backwards ? BACKWARDS : FORWARDS,
        fromRevision: options?.fromRevision === undefined ? (backwards ? END : START) : BigInt(options.fromRevision),
        ...(options?.maxCount === undefined ? {} : { maxCount: options.maxCount }),
      })) {
        if (resolved.event !== undefined) recorded.push(toRecordedEvent(resolved.event));
      }
    } catch (error) {
      if (isError(error, ErrorType.STREAM_NOT_FOUND)) return [];
      throw error;
    }
    return recorded;
  }

  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readAllFrom(options?.fromPosition ?? 0, options?.maxCount);
  }

  /**
   * $all after an exclusive position. The server reads from an inclusive one, and keeps
   * truncated events in $all until a scavenge, so both are filtered here.
   */
  private async readAllFrom(fromPosition: number, maxCount: number | undefined): Promise<RecordedEvent[]> {
    const wanted = maxCount ?? Number.MAX_SAFE_INTEGER;
    const recorded: RecordedEvent[] = [];
    let from = fromPosition;
    while (recorded.length < wanted) {
      // One more than needed: the event at `from` itself comes back first.
      const pageSize = Math.min(wanted - recorded.length + 1, 1000);
      const page: RecordedEvent[] = [];
      let read = 0;
      let lastSeen = from;
      for await (const resolved of this.client.readAll({
        fromPosition: from === 0 ? START : { commit: BigInt(from), prepare: BigInt(from) },
        maxCount: pageSize,
        filter: excludeSystemEvents(),
      }) as AsyncIterable<AllStreamResolvedEvent>) {
        read += 1;
        const event = resolved.event;
        if (event === undefined) continue;
        const position = Number(event.position.commit);
        if (position <= from) continue;
        lastSeen = position;
        if (!event.streamId.startsWith("$")) page.push(toRecordedEvent(event));
      }
      recorded.push(...(await this.withoutTruncated(page)));
      if (read < pageSize || lastSeen === from) break; // the end of $all
      from = lastSeen;
    }
    return recorded.slice(0, wanted);
  }

  private async withoutTruncated(events: RecordedEvent[]): Promise<RecordedEvent[]> {
    const streams = [...new Set(events.map((event) => event.stream))];
    const bounds = new Map(await Promise.all(streams.map(async (stream) => [stream, await this.truncatedBefore(stream)] as const)));
    return events.filter((event) => event.revision >= (bounds.get(event.stream) ?? 0));
  }

  private async truncatedBefore(stream: string): Promise<number> {
    const { metadata } = await this.client.getStreamMetadata(stream);
    const bound = metadata?.truncateBefore;
    return typeof bound === "number" ? bound : 0;
  }

  subscribeToAll(options: SubscribeToAllOptions): AllSubscription {
    this.assertOpen();
    const subscription = runAllSubscription(
      options,
      (fromPosition, maxCount) => this.readAllFrom(fromPosition, maxCount),
      this.signal,
      (stopped) => {
        this.subscriptions.delete(stopped);
        if (this.subscriptions.size === 0) void this.stopLiveFeed();
      },
    );
    this.subscriptions.add(subscription);
    this.startLiveFeed();
    return subscription;
  }

  /** A server-side live subscription used only as a doorbell: reads still go through readAll. */
  private startLiveFeed(): void {
    if (this.safetyPoll === undefined) {
      this.safetyPoll = setInterval(() => {
        this.signal.notify();
        if (this.liveFeed === undefined && this.subscriptions.size > 0) this.startLiveFeed();
      }, this.options.safetyPollMs ?? 2000);
      this.safetyPoll.unref();
    }
    if (this.liveFeed !== undefined || this.closed) return;
    const feed = this.client.subscribeToAll({ fromPosition: END, filter: excludeSystemEvents() });
    this.liveFeed = feed;
    feed.on("data", () => this.signal.notify());
    feed.on("error", () => {
      if (this.liveFeed === feed) this.liveFeed = undefined;
    });
  }

  private async stopLiveFeed(): Promise<void> {
    clearInterval(this.safetyPoll);
    this.safetyPoll = undefined;
    const feed = this.liveFeed;
    this.liveFeed = undefined;
    await feed?.unsubscribe().catch(() => {});
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    for await (const resolved of this.client.readAll({
      direction: BACKWARDS,
      fromPosition: END,
      maxCount: 1,
      filter: excludeSystemEvents(),
    }) as AsyncIterable<AllStreamResolvedEvent>) {
      if (resolved.event !== undefined) return Number(resolved.event.position.commit);
    }
    return 0;
  }

  /** EventStoreDB has no read of several streams' ends: one read each, at once. */
  async streamRevisions(streams: readonly string[]): Promise<(number | undefined)[]> {
    return Promise.all(streams.map((stream) => this.streamRevision(stream)));
  }

  async streamRevision(stream: string): Promise<number | undefined> {
    this.assertOpen();
    const [last] = await this.readStream(stream, { direction: "backwards", maxCount: 1 });
    if (last !== undefined) return last.revision;
    // Fully truncated: truncateBefore never sets $tb past the last revision + 1, so $tb - 1 is it.
    const bound = await this.truncatedBefore(stream);
    return bound > 0 ? bound - 1 : undefined;
  }

  /** Retention through the stream's $tb metadata; the space comes back at the next scavenge. */
  async truncateBefore(stream: string, beforeRevision: number): Promise<void> {
    this.assertOpen();
    if (!Number.isSafeInteger(beforeRevision)) throw new RangeError(`invalid revision ${beforeRevision}`);
    if (beforeRevision <= 0) return;
    for (let attempt = 0; ; attempt++) {
      const revision = await this.streamRevision(stream);
      if (revision === undefined) return;
      const { metadata, metastreamRevision } = await this.client.getStreamMetadata(stream);
      const bound = Math.min(beforeRevision, revision + 1);
      if (typeof metadata?.truncateBefore === "number" && metadata.truncateBefore >= bound) return;
      try {
        await this.client.setStreamMetadata(
          stream,
          { ...metadata, truncateBefore: bound },
          { expectedRevision: metastreamRevision ?? NO_STREAM },
        );
        return;
      } catch (error) {
        // Another truncation raced this one: re-read and move $tb forward only.
        if (!isError(error, ErrorType.WRONG_EXPECTED_VERSION) || attempt >= maxOptimisticRetries) throw error;
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all([...this.streamQueues.values()]);
    await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
    this.closed = true;
    await this.stopLiveFeed();
    await this.client.dispose();
  }

  private assertOpen(): void {
    if (this.closed) throw new EventStoreClosedError();
  }
}
