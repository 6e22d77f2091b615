// The in-process broker over one log file: consumer groups, their members and one worker per
// (group, topic partition). A single worker per partition is what keeps per-key order and makes
// sure no two members of a group handle the same record at once; publish wakes the workers of
// the partitions it wrote to, so nothing polls.
import { assignPartitions } from "./assignment.js";
import { partitionKey } from "../partition.js";
import { MessageLog } from "./messageLog.js";
import { Interrupter, Slots, interrupted } from "../interrupter.js";
import { retryDelay } from "../retry.js";
import type { BusLog, BusRecord, OutgoingMessage, RetryPolicy } from "../bus.js";

type Outcome = "committed" | "given-up" | "abandoned";

/** How many records a worker reads per query. */
const readBatch = 64;

export class Member {
  /** Fired by a graceful stop: no new records, retries give up. */
  readonly stopped = new Interrupter();
  /** Fired by close: running handlers are abandoned uncommitted. */
  readonly abandoned = new Interrupter();
  private readonly slots: Slots;
  private readonly inFlight = new Set<Promise<Outcome>>();

  constructor(
    readonly id: number,
    readonly group: Group,
    readonly topics: ReadonlySet<string>,
    private readonly handler: (record: BusRecord) => Promise<void>,
    concurrency: number,
    private readonly retry: RetryPolicy,
    private readonly log: BusLog,
  ) {
    this.slots = new Slots(concurrency);
  }

  deliver(record: BusRecord): Promise<Outcome> {
    const outcome = this.handle(record);
    this.inFlight.add(outcome);
    void outcome.finally(() => this.inFlight.delete(outcome));
    return outcome;
  }

  private async handle(record: BusRecord): Promise<Outcome> {
    if (!(await this.slots.acquire(this.stopped))) return "given-up";
    try {
      for (let attempt = 1; ; attempt++) {
        let failure: unknown;
        try {
          const result = await this.abandoned.guard(Promise.resolve().then(() => this.handler(record)));
          if (result === interrupted || this.group.broker.closed) return "abandoned";
          const log = this.group.broker.log;
          await log.batch.run(() => log.commit(this.group.id, record.topic, record.partition, Number(record.offset) + 1));
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
    await Promise.all([...this.inFlight]);
    this.group.leave(this);
  }

  /** Leaves at once; whatever the handlers were doing stays uncommitted. */
  abandon(): void {
    this.stopped.fire();
    this.abandoned.fire();
    this.group.leave(this);
  }
}

class PartitionWorker {
  private wakeup: (() => void) | undefined;
  private wakePending = false;
  readonly done: Promise<void>;

  constructor(
    private readonly group: Group,
    readonly topic: string,
    readonly partition: number,
    private next: number,
  ) {
    this.done = this.run();
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
        this.group.workerDone(this);
        return;
      }
      const owner = this.group.ownerOf(this.topic, this.partition);
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
    const appended = await this.log.batch.run(() => this.log.append(topic, messages));
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
    this.log.close();
  }
}
