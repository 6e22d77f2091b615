// The in-process broker over one log file: consumer groups, their members and one worker per
// (group, topic partition). A single worker per partition is what keeps per-key order and makes
// sure no two members of a group handle the same record at once; publish wakes the workers of
// the partitions it wrote to, so nothing polls. For a member in keyed mode the worker reads ahead
// into that member's KeyedDispatcher for the partition instead of delivering record by record.
import { assignPartitions } from "./assignment.js";
import { partitionForKey, partitionKey } from "../partition.js";
import { MessageLog } from "./messageLog.js";
import { Interrupter, Slots, interrupted } from "../interrupter.js";
import { KeyedDispatcher } from "../keyedDispatcher.js";
import { retryDelay } from "../retry.js";
import { BusClosedError, type BusLog, type BusRecord, type OutgoingMessage, type ResolvedKeyedOptions, type RetryPolicy } from "../bus.js";

type Outcome = "committed" | "given-up" | "abandoned";

/** How many records a worker reads per query. */
const readBatch = 64;
/** How many records a keyed worker reads per query (fewer when the pending bound leaves less room). */
const readAheadBatch = 256;

/** What a member does with records: one at a time, or per key (see KeyedConsumeOptions). */
export type MemberMode = { readonly handler: (record: BusRecord) => Promise<void> } | { readonly keyed: ResolvedKeyedOptions };

export class Member {
  /** Fired by a graceful stop: no new records, retries give up. */
  readonly stopped = new Interrupter();
  /** Fired by close: running handlers are abandoned uncommitted. */
  readonly abandoned = new Interrupter();
  private readonly slots: Slots;
  private readonly inFlight = new Set<Promise<Outcome>>();
  private readonly dispatchers = new Set<KeyedDispatcher>();

  constructor(
    readonly id: number,
    readonly group: Group,
    readonly topics: ReadonlySet<string>,
    private readonly mode: MemberMode,
    concurrency: number,
    private readonly retry: RetryPolicy,
    private readonly log: BusLog,
  ) {
    this.slots = new Slots(concurrency);
  }

  get keyed(): boolean {
    return "keyed" in this.mode;
  }

  /** Keyed mode: the dispatcher for a partition this member was just given, reading from `start`. */
  dispatcher(topic: string, partition: number, start: number, wake: () => void): KeyedDispatcher {
    if (!("keyed" in this.mode)) throw new Error("dispatcher() of a member in per-record mode");
    const { broker } = this.group;
    const dispatcher = new KeyedDispatcher({
      groupId: this.group.id,
      topic,
      partition,
      keyed: this.mode.keyed,
      retry: this.retry,
      log: this.log,
      start: BigInt(start),
      commit: async (nextOffset) => {
        if (broker.closed) throw new BusClosedError();
        await broker.log.commit(this.group.id, topic, partition, Number(nextOffset));
      },
      onCapacity: wake,
      logEnd: () => (broker.closed ? undefined : BigInt(broker.log.endOffset(topic, partition))),
    });
    if (this.abandoned.fired) dispatcher.abandon();
    this.dispatchers.add(dispatcher);
    return dispatcher;
  }

  /** Hands a partition on: running calls finish and commit first, so the next owner starts after them. */
  async release(dispatcher: KeyedDispatcher): Promise<void> {
    await dispatcher.stop();
    this.dispatchers.delete(dispatcher);
  }

  deliver(record: BusRecord): Promise<Outcome> {
    const outcome = this.handle(record);
    this.inFlight.add(outcome);
    void outcome.finally(() => this.inFlight.delete(outcome));
    return outcome;
  }

  private async handle(record: BusRecord): Promise<Outcome> {
    if (!("handler" in this.mode)) throw new Error("deliver() to a member in keyed mode");
    const { handler } = this.mode;
    if (!(await this.slots.acquire(this.stopped))) return "given-up";
    try {
      for (let attempt = 1; ; attempt++) {
        let failure: unknown;
        try {
          const result = await this.abandoned.guard(Promise.resolve().then(() => handler(record)));
          if (result === interrupted || this.group.broker.closed) return "abandoned";
          const log = this.group.broker.log;
          await log.commit(this.group.id, record.topic, record.partition, Number(record.offset) + 1);
          return "committed";
        } catch (error) {
          failure = error;
        }
        this.log({
          level: "error",
          message: `handler of group ${this.group.id} failed on ${record.topic}[${record.partition}]@${record.offset}, attempt ${attempt}; retrying`,
          error: failure,
          fields: { groupId: this.group.id, topic: record.topic, partition: record.partition, offset: record.offset, attempt },
        });
        if (!(await this.stopped.pause(retryDelay(attempt, this.retry)))) return "given-up";
      }
    } finally {
      this.slots.release();
    }
  }

  async stop(): Promise<void> {
    if (!this.stopped.fired) {
      this.stopped.fire();
      this.group.membershipChanged();
    }
    await Promise.all([...this.inFlight, ...[...this.dispatchers].map((dispatcher) => dispatcher.stop())]);
    this.group.leave(this);
  }

  /** Leaves at once; whatever the handlers were doing stays uncommitted. */
  abandon(): void {
    this.stopped.fire();
    this.abandoned.fire();
    for (const dispatcher of this.dispatchers) dispatcher.abandon();
    this.group.leave(this);
  }
}

class PartitionWorker {
  private wakeup: (() => void) | undefined;
  private wakePending = false;
  /** Keyed mode: the owner's dispatcher, fed from `next` on. */
  private keyed: { readonly owner: Member; readonly dispatcher: KeyedDispatcher } | undefined;
  readonly done: Promise<void>;

  constructor(
    private readonly group: Group,
    readonly topic: string,
    readonly partition: number,
    private next: number,
  ) {
    this.done = this.run();
  }

  /** The dispatcher reading this partition for `member` now, if it still owns it (keyed mode). */
  dispatcherOf(member: Member): KeyedDispatcher | undefined {
    const keyed = this.keyed;
    if (!keyed || keyed.owner !== member || member.stopped.fired || this.group.broker.closed) return undefined;
    return this.group.ownerOf(this.topic, this.partition) === member ? keyed.dispatcher : undefined;
  }

  wake(): void {
    const wakeup = this.wakeup;
    if (wakeup) {
      this.wakeup = undefined;
      wakeup();
    } else {
      this.wakePending = true;
    }
  }

  private sleep(): Promise<void> {
    if (this.wakePending) {
      this.wakePending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => (this.wakeup = resolve));
  }

  private async run(): Promise<void> {
    const { broker } = this.group;
    for (;;) {
      // Checked and acted on synchronously, so a member joining meanwhile finds no stale worker.
      if (broker.closed || !this.group.subscribes(this.topic)) {
        // The stopping member's stop() waits for this dispatcher; nothing here needs it any more.
        if (this.keyed) void this.keyed.owner.release(this.keyed.dispatcher);
        this.group.workerDone(this);
        return;
      }
      const owner = this.group.ownerOf(this.topic, this.partition);
      if (this.keyed && this.keyed.owner !== owner) {
        // The partition moves (or its owner stops): the old owner's running calls finish and commit,
        // then reading restarts at the commit, so the next owner gets everything not done.
        await this.keyed.owner.release(this.keyed.dispatcher);
        this.keyed = undefined;
        if (!broker.closed) this.next = broker.log.startOffset(this.group.id, this.topic, this.partition, true);
        continue;
      }
      if (owner?.keyed) {
        await this.readAhead(owner);
        continue;
      }
      const records = owner ? broker.log.read(this.topic, this.partition, this.next, readBatch) : [];
      if (!owner || records.length === 0) {
        await this.sleep();
        continue;
      }
      for (const record of records) {
        if (broker.closed || this.group.ownerOf(this.topic, this.partition) !== owner) break;
        if ((await owner.deliver(record)) !== "committed") break;
        this.next = Number(record.offset) + 1;
      }
    }
  }

  /** Keyed mode: reads what the pending bounds admit into the owner's dispatcher, or sleeps until there is more to read or room. */
  private async readAhead(owner: Member): Promise<void> {
    this.keyed ??= { owner, dispatcher: owner.dispatcher(this.topic, this.partition, this.next, () => this.wake()) };
    const { dispatcher } = this.keyed;
    const wanted = Math.min(dispatcher.room, readAheadBatch);
    const records = dispatcher.paused ? [] : this.group.broker.log.read(this.topic, this.partition, this.next, wanted);
    if (records.length > 0) {
      dispatcher.offer(records);
      this.next = Number(dispatcher.position);
    }
    // Fewer than asked for: the partition's end was reached, and a publish after this read wakes
    // the worker (wakePending), so reading again now would only find nothing (a query of the
    // file's end each time: one per publish).
    if (records.length === 0 || records.length < wanted) await this.sleep();
  }
}

export class Group {
  private readonly members: Member[] = [];
  private readonly workers = new Map<string, PartitionWorker>();
  private assignment = new Map<string, number>();

  constructor(
    readonly id: string,
    readonly broker: EmbeddedBroker,
  ) {}

  join(member: Member, fromBeginning: boolean): void {
    const { log } = this.broker;
    for (const topic of member.topics) {
      for (let partition = 0; partition < log.partitions(topic); partition++) {
        log.startOffset(this.id, topic, partition, fromBeginning);
      }
    }
    this.members.push(member);
    this.reassign();
    for (const topic of member.topics) {
      for (let partition = 0; partition < log.partitions(topic); partition++) {
        const key = partitionKey(topic, partition);
        if (this.workers.has(key)) continue;
        const worker = new PartitionWorker(this, topic, partition, log.startOffset(this.id, topic, partition, fromBeginning));
        this.workers.set(key, worker);
        this.broker.watch(worker);
      }
    }
    this.wakeAll();
  }

  leave(member: Member): void {
    const index = this.members.indexOf(member);
    if (index < 0) return;
    this.members.splice(index, 1);
    this.membershipChanged();
  }

  membershipChanged(): void {
    this.reassign();
    this.wakeAll();
  }

  subscribes(topic: string): boolean {
    return this.members.some((member) => !member.stopped.fired && member.topics.has(topic));
  }

  ownerOf(topic: string, partition: number): Member | undefined {
    const id = this.assignment.get(partitionKey(topic, partition));
    return this.members.find((member) => member.id === id);
  }

  workerDone(worker: PartitionWorker): void {
    this.workers.delete(partitionKey(worker.topic, worker.partition));
    this.broker.unwatch(worker);
  }

  workersDone(): Promise<unknown> {
    return Promise.all([...this.workers.values()].map((worker) => worker.done));
  }

  wakeAll(): void {
    for (const worker of this.workers.values()) worker.wake();
  }

  /** See Bus.offerLocally: to the dispatcher of one of `members` that reads the message's partition now. */
  offerLocally(members: ReadonlySet<Member>, topic: string, message: OutgoingMessage, fallback: () => void): boolean {
    const partitions = this.broker.log.knownPartitions(topic);
    if (partitions === undefined) return false;
    const partition = partitionForKey(message.key, partitions);
    const worker = this.workers.get(partitionKey(topic, partition));
    const owner = this.ownerOf(topic, partition);
    const dispatcher = owner && members.has(owner) ? worker?.dispatcherOf(owner) : undefined;
    return dispatcher?.offerLocal(message, fallback) ?? false;
  }

  private reassign(): void {
    const active = this.members.filter((member) => !member.stopped.fired);
    const topics = new Map<string, number>();
    for (const member of active) for (const topic of member.topics) topics.set(topic, this.broker.log.partitions(topic));
    this.assignment = assignPartitions(active, topics);
  }
}

export class EmbeddedBroker {
  private closedFlag = false;
  private readonly groups = new Map<string, Group>();
  private readonly watchers = new Map<string, Set<PartitionWorker>>();
  private nextMemberId = 1;

  constructor(readonly log: MessageLog) {}

  get closed(): boolean {
    return this.closedFlag;
  }

  /** The group, if any member ever joined it in this process. */
  existingGroup(id: string): Group | undefined {
    return this.groups.get(id);
  }

  group(id: string): Group {
    let group = this.groups.get(id);
    if (!group) {
      group = new Group(id, this);
      this.groups.set(id, group);
    }
    return group;
  }

  memberId(): number {
    return this.nextMemberId++;
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.log.partitions(topic); // an unknown topic fails before queueing
    const appended = await this.log.append(topic, messages);
    const touched = new Set(appended.map(({ partition }) => partitionKey(topic, partition)));
    for (const key of touched) for (const worker of this.watchers.get(key) ?? []) worker.wake();
  }

  watch(worker: PartitionWorker): void {
    const key = partitionKey(worker.topic, worker.partition);
    let set = this.watchers.get(key);
    if (!set) this.watchers.set(key, (set = new Set()));
    set.add(worker);
  }

  unwatch(worker: PartitionWorker): void {
    this.watchers.get(partitionKey(worker.topic, worker.partition))?.delete(worker);
  }

  /** Stops every worker (their members were abandoned by their buses), then closes the file. */
  async shutdown(): Promise<void> {
    this.closedFlag = true;
    for (const group of this.groups.values()) group.wakeAll();
    await Promise.all([...this.groups.values()].map((group) => group.workersDone()));
    await this.log.close();
  }
}
