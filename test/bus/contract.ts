// The behaviour every Bus adapter must show. Each adapter's test file calls describeBusContract
// with a fixture whose open() returns a new node on the same log (embedded: the same file;
// Kafka: the same cluster). Topic and group names are unique per test, so runs never collide.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { UnknownTopicError, type Bus, type BusConsumer, type BusLog, type BusLogEntry, type BusRecord } from "../../src/bus/bus.js";
import { partitionForKey } from "../../src/bus/partition.js";
import { partitionBacklogs } from "../../src/bus/keyedDispatcher.js";
import { openReplyChannel, replyHeaders, ReplyTimeoutError, serveRequests } from "../../src/bus/reply.js";

export interface BusFixture {
  /** A new node on the same log or cluster. */
  open(options?: { log?: BusLog }): Promise<Bus>;
  /** Undoes whatever the fixture set up (called once, after all tests). */
  dispose(): Promise<void>;
}

export interface BusContractOptions {
  /** Per-test timeout; Kafka needs longer for group joins. */
  readonly timeoutMs: number;
}

const fastRetry = { initialMs: 20, maxMs: 100 };

/** Gathers records; until() resolves once a condition holds (checked on every record). */
class Received {
  readonly records: BusRecord[] = [];
  private waiters: { check: () => boolean; resolve: () => void }[] = [];

  add(record: BusRecord): void {
    this.records.push(record);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.check()) return true;
      waiter.resolve();
      return false;
    });
  }

  values(): string[] {
    return this.records.map((record) => record.value.toString());
  }

  until(check: (records: BusRecord[]) => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    if (check(this.records)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.values())}`)), timeoutMs);
      this.waiters.push({
        check: () => check(this.records),
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  count(n: number, timeoutMs?: number): Promise<void> {
    return this.until((records) => records.length >= n, `${n} records`, timeoutMs);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` distinct keys that Kafka's partitioner puts on partition `partition` of `partitions`. */
function keysOnPartition(count: number, partitions: number, partition = 0, prefix = "source"): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    if (partitionForKey(`${prefix}-${i}`, partitions) === partition) keys.push(`${prefix}-${i}`);
  }
  return keys;
}

/** Keyed handler calls, as value lists, plus every record handed over. */
class Calls {
  readonly calls: string[][] = [];
  readonly received = new Received();

  add(records: readonly BusRecord[]): void {
    this.calls.push(records.map((record) => record.value.toString()));
    for (const record of records) this.received.add(record);
  }

  of(key: string): string[][] {
    return this.calls.filter((values) => values[0].startsWith(`${key}:`));
  }
}

export function describeBusContract(name: string, setup: () => Promise<BusFixture>, options: BusContractOptions): void {
  describe(`Bus contract: ${name}`, function () {
    this.timeout(options.timeoutMs);
    let fixture: BusFixture;
    let opened: Bus[] = [];
    let consumers: BusConsumer[] = [];
    let unique: string;

    const open = async (log?: BusLog): Promise<Bus> => {
      const bus = await fixture.open(log ? { log } : {});
      opened.push(bus);
      return bus;
    };
    const consume = async (bus: Bus, o: Parameters<Bus["consume"]>[0]): Promise<BusConsumer> => {
      const consumer = await bus.consume(o);
      consumers.push(consumer);
      return consumer;
    };
    const topic = (label: string): string => `t-${label}-${unique}`;
    const group = (label: string): string => `g-${label}-${unique}`;

    before(async function () {
      this.timeout(300_000);
      fixture = await setup();
    });
    after(async () => {
      await fixture?.dispose();
    });
    beforeEach(() => {
      unique = randomUUID().slice(0, 8);
    });
    afterEach(async () => {
      await Promise.all(consumers.map((consumer) => consumer.stop().catch(() => undefined)));
      await Promise.all(opened.map((bus) => bus.close()));
      consumers = [];
      opened = [];
    });

    it("delivers published messages with key, value, headers and a key-determined partition", async () => {
      const bus = await open();
      const orders = topic("roundtrip");
      await bus.ensureTopics([{ name: orders, partitions: 3 }]);
      const received = new Received();
      await consume(bus, { groupId: group("a"), topics: [orders], handler: async (r) => received.add(r) });
      const before = Date.now();
      await bus.publish(orders, [
        { key: "source-1", value: "hello", headers: { "event-type": "greeting" } },
        { key: "source-2", value: Buffer.from([0, 1, 2, 255]) },
      ]);
      await received.count(2);
      const byKey = new Map(received.records.map((r) => [r.key, r]));
      const first = byKey.get("source-1")!;
      const second = byKey.get("source-2")!;
      expect(first.topic).to.equal(orders);
      expect(Buffer.isBuffer(first.value)).to.equal(true);
      expect(first.value.toString()).to.equal("hello");
      expect(first.headers).to.deep.equal({ "event-type": "greeting" });
      expect(second.value).to.deep.equal(Buffer.from([0, 1, 2, 255]));
      expect(second.headers).to.deep.equal({});
      for (const record of [first, second]) {
        expect(record.partition).to.equal(partitionForKey(record.key, 3));
        expect(record.offset).to.match(/^\d+$/);
        expect(record.timestamp).to.be.within(before - 5000, Date.now() + 5000);
      }
    });

    it("rejects publishing to or consuming from a topic that was never ensured", async () => {
      const bus = await open();
      const missing = topic("missing");
      const publishing = await bus.publish(missing, [{ key: "k", value: "v" }]).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(publishing).to.be.instanceOf(UnknownTopicError);
      const consuming = await bus.consume({ groupId: group("x"), topics: [missing], handler: async () => {} }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(consuming).to.be.instanceOf(UnknownTopicError);
    });

    it("keeps per-key order while handling different partitions concurrently", async () => {
      const bus = await open();
      const events = topic("order");
      await bus.ensureTopics([{ name: events, partitions: 4 }]);
      const keys = Array.from({ length: 8 }, (_, i) => `emitter-${i}`);
      const perKey = 20;
      for (let round = 0; round < perKey; round += 5) {
        const batch = [];
        for (let n = round; n < round + 5; n++) for (const key of keys) batch.push({ key, value: `${key}:${n}` });
        await bus.publish(events, batch);
      }
      const received = new Received();
      let running = 0;
      let mostAtOnce = 0;
      await consume(bus, {
        groupId: group("order"),
        topics: [events],
        partitionsConcurrently: 4,
        handler: async (record) => {
          running++;
          mostAtOnce = Math.max(mostAtOnce, running);
          await pause(2 + (Number(record.offset) % 3));
          running--;
          received.add(record);
        },
      });
      await received.count(keys.length * perKey, 60_000);
      for (const key of keys) {
        const sequence = received.records.filter((r) => r.key === key).map((r) => Number(r.value.toString().split(":")[1]));
        expect(sequence, key).to.deep.equal(Array.from({ length: perKey }, (_, n) => n));
      }
      expect(mostAtOnce, "handlers running at once").to.be.greaterThan(1);
      expect(mostAtOnce).to.be.at.most(4);
    });

    it("reports a keyed group's lag on each partition it reads: records not yet committed past, 0 once done", async () => {
      const bus = await open();
      const work = topic("lag");
      const groupId = group("lag");
      await bus.ensureTopics([{ name: work, partitions: 1 }]);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const received = new Received();
      await consume(bus, {
        groupId,
        topics: [work],
        keyed: {
          handler: async (records) => {
            await held;
            records.forEach((r) => received.add(r));
          },
        },
      });
      await bus.publish(
        work,
        ["a", "b", "c", "d"].map((value) => ({ key: "k", value })),
      );
      const lag = () => partitionBacklogs().find((p) => p.groupId.endsWith(groupId) && p.topic.endsWith(work))?.lag;
      const until = async (check: () => boolean, what: string) => {
        const deadline = Date.now() + 20_000;
        while (!check()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (lag ${lag()})`);
          await pause(20);
        }
      };
      await until(() => lag() === 4, "a lag of the 4 held records");
      release();
      await received.count(4);
      await until(() => lag() === 0, "a lag of 0 once committed");
    });

    it("resolves many concurrent publishes, to several topics, and delivers them in per-key call order", async () => {
      const bus = await open();
      const invocations = topic("burst-a");
      const emits = topic("burst-b");
      await bus.ensureTopics([
        { name: invocations, partitions: 3 },
        { name: emits, partitions: 2 },
      ]);
      const received = new Received();
      await consume(bus, {
        groupId: group("burst"),
        topics: [invocations, emits],
        keyed: { handler: async (records) => records.forEach((r) => received.add(r)) },
      });
      const keys = Array.from({ length: 10 }, (_, i) => `source-${i}`);
      const perKey = 30;
      const publishes: Promise<void>[] = [];
      // Issued without waiting, one message each: the call order is the order each key must keep.
      for (let n = 0; n < perKey; n++) {
        for (const [i, key] of keys.entries()) {
          publishes.push(bus.publish(i % 2 === 0 ? invocations : emits, [{ key, value: `${key}:${n}` }]));
        }
      }
      await Promise.all(publishes);
      await received.count(keys.length * perKey, 60_000);
      for (const [i, key] of keys.entries()) {
        const records = received.records.filter((r) => r.key === key);
        expect(new Set(records.map((r) => r.topic)), key).to.deep.equal(new Set([i % 2 === 0 ? invocations : emits]));
        expect(
          records.map((r) => Number(r.value.toString().split(":")[1])),
          key,
        ).to.deep.equal(Array.from({ length: perKey }, (_, n) => n));
      }
    });

    it("splits a group's work between two members, no record handled by both", async () => {
      const nodeA = await open();
      const nodeB = await open();
      const work = topic("split");
      await nodeA.ensureTopics([{ name: work, partitions: 4 }]);
      const shared = group("workers");
      const byA = new Received();
      const byB = new Received();
      const all = new Received();
      const consumerA = await consume(nodeA, { groupId: shared, topics: [work], handler: async (r) => (byA.add(r), all.add(r)) });
      const consumerB = await consume(nodeB, { groupId: shared, topics: [work], handler: async (r) => (byB.add(r), all.add(r)) });
      const messages = Array.from({ length: 40 }, (_, i) => ({ key: `source-${i % 20}`, value: `job-${i}` }));
      await nodeA.publish(work, messages);
      await all.until((records) => new Set(records.map((r) => r.value.toString())).size === 40, "all 40 jobs");
      await Promise.all([consumerA.stop(), consumerB.stop()]);
      const a = new Set(byA.values());
      const b = new Set(byB.values());
      expect(
        [...a].filter((job) => b.has(job)),
        "handled by both",
      ).to.deep.equal([]);
      expect(all.records.length, "records handled in total").to.equal(40);
      expect(a.size, "jobs on A").to.be.greaterThan(0);
      expect(b.size, "jobs on B").to.be.greaterThan(0);
      // A partition belongs to one member: the split follows partitions, so keys stay with one member.
      const partitionsA = new Set(byA.records.map((r) => r.partition));
      expect(byB.records.filter((r) => partitionsA.has(r.partition))).to.deep.equal([]);
    });

    it("gives every group its own copy of each message", async () => {
      const bus = await open();
      const emits = topic("fanout");
      await bus.ensureTopics([{ name: emits, partitions: 2 }]);
      const webhooks = new Received();
      const sse = new Received();
      await consume(bus, { groupId: group("webhooks"), topics: [emits], handler: async (r) => webhooks.add(r) });
      await consume(bus, { groupId: group("sse"), topics: [emits], handler: async (r) => sse.add(r) });
      const values = Array.from({ length: 10 }, (_, i) => `event-${i}`);
      await bus.publish(
        emits,
        values.map((value, i) => ({ key: `k${i % 3}`, value })),
      );
      await Promise.all([webhooks.count(10), sse.count(10)]);
      expect(new Set(webhooks.values())).to.deep.equal(new Set(values));
      expect(new Set(sse.values())).to.deep.equal(new Set(values));
    });

    it("resumes a group from its committed offsets after a restart, without reprocessing", async () => {
      const nodeA = await open();
      const invocations = topic("resume");
      const workers = group("resume");
      await nodeA.ensureTopics([{ name: invocations, partitions: 2 }]);
      const first = new Received();
      const consumerA = await consume(nodeA, { groupId: workers, topics: [invocations], handler: async (r) => first.add(r) });
      await nodeA.publish(
        invocations,
        ["a", "b", "c", "d", "e"].map((value, i) => ({ key: `s${i}`, value })),
      );
      await first.count(5);
      await consumerA.stop();
      await nodeA.publish(
        invocations,
        ["f", "g", "h"].map((value, i) => ({ key: `s${i}`, value })),
      );
      await nodeA.close();

      const nodeB = await open();
      const second = new Received();
      const consumerB = await consume(nodeB, { groupId: workers, topics: [invocations], handler: async (r) => second.add(r) });
      await second.count(3);
      await consumerB.stop();
      expect(first.values().sort()).to.deep.equal(["a", "b", "c", "d", "e"]);
      expect(second.values().sort()).to.deep.equal(["f", "g", "h"]);
    });

    it("retries a failing handler with backoff until it succeeds, keeping the key's order and reporting each failure", async () => {
      const logged: BusLogEntry[] = [];
      const bus = await open((entry) => logged.push(entry));
      const deliveries = topic("retry");
      await bus.ensureTopics([{ name: deliveries, partitions: 1 }]);
      const attempts = new Map<string, number[]>();
      const received = new Received();
      await consume(bus, {
        groupId: group("retry"),
        topics: [deliveries],
        retry: fastRetry,
        handler: async (record) => {
          const value = record.value.toString();
          attempts.set(value, [...(attempts.get(value) ?? []), Date.now()]);
          if (value === "flaky" && attempts.get(value)!.length < 3) throw new Error("receiver returned 503");
          received.add(record);
        },
      });
      await bus.publish(deliveries, [
        { key: "listener-1", value: "before" },
        { key: "listener-1", value: "flaky" },
        { key: "listener-1", value: "after" },
      ]);
      await received.count(3);
      expect(received.values()).to.deep.equal(["before", "flaky", "after"]);
      const tries = attempts.get("flaky")!;
      expect(tries).to.have.length(3);
      // Backoff: each wait is at least half the capped exponential delay (20 ms, then 40 ms).
      expect(tries[1] - tries[0]).to.be.at.least(10);
      expect(tries[2] - tries[1]).to.be.at.least(20);
      expect(attempts.get("after")).to.have.length(1);
      const failures = logged.filter((entry) => entry.level === "error" && /failed/.test(entry.message));
      expect(failures).to.have.length(2);
      expect((failures[0].error as Error).message).to.equal("receiver returned 503");
    });

    it("redelivers a record whose handler never finished when its node went away", async () => {
      const nodeA = await open();
      const jobs = topic("crash");
      const workers = group("crash");
      await nodeA.ensureTopics([{ name: jobs, partitions: 1 }]);
      const started = deferred();
      const never = deferred();
      const seenByA: string[] = [];
      await nodeA.consume({
        groupId: workers,
        topics: [jobs],
        handler: async (record) => {
          seenByA.push(record.value.toString());
          started.resolve();
          await never.promise;
        },
      });
      await nodeA.publish(jobs, [
        { key: "s", value: "job-1" },
        { key: "s", value: "job-2" },
      ]);
      await started.promise;
      await nodeA.close();

      const nodeB = await open();
      const received = new Received();
      await consume(nodeB, { groupId: workers, topics: [jobs], handler: async (r) => received.add(r) });
      await received.count(2);
      never.resolve();
      expect(seenByA).to.deep.equal(["job-1"]);
      expect(received.values()).to.deep.equal(["job-1", "job-2"]);
      expect(received.records[0].offset).to.equal("0");
    });

    it("lets a graceful stop finish the running handler and commit it", async () => {
      const nodeA = await open();
      const jobs = topic("drain");
      const workers = group("drain");
      await nodeA.ensureTopics([{ name: jobs, partitions: 1 }]);
      const started = deferred();
      const finished: string[] = [];
      const consumerA = await nodeA.consume({
        groupId: workers,
        topics: [jobs],
        handler: async (record) => {
          started.resolve();
          await pause(200);
          finished.push(record.value.toString());
        },
      });
      await nodeA.publish(jobs, [{ key: "s", value: "slow-job" }]);
      await started.promise;
      await consumerA.stop();
      expect(finished).to.deep.equal(["slow-job"]);
      await nodeA.publish(jobs, [{ key: "s", value: "next-job" }]);

      const received = new Received();
      await consume(nodeA, { groupId: workers, topics: [jobs], handler: async (r) => received.add(r) });
      await received.count(1);
      await pause(300);
      expect(received.values()).to.deep.equal(["next-job"]);
    });

    it("keeps published messages when the publishing node closes before anyone consumed them", async () => {
      const nodeA = await open();
      const emits = topic("durable");
      await nodeA.ensureTopics([{ name: emits, partitions: 2 }]);
      await nodeA.publish(
        emits,
        ["e1", "e2", "e3"].map((value) => ({ key: "emitter", value })),
      );
      await nodeA.close();

      const nodeB = await open();
      const received = new Received();
      await consume(nodeB, { groupId: group("late"), topics: [emits], handler: async (r) => received.add(r) });
      await received.count(3);
      expect(received.values()).to.deep.equal(["e1", "e2", "e3"]);
    });

    it("starts a new group at the end when fromBeginning is false", async () => {
      const bus = await open();
      const emits = topic("latest");
      await bus.ensureTopics([{ name: emits, partitions: 1 }]);
      await bus.publish(emits, [{ key: "k", value: "old" }]);
      const received = new Received();
      await consume(bus, { groupId: group("latest"), topics: [emits], fromBeginning: false, handler: async (r) => received.add(r) });
      await bus.publish(emits, [{ key: "k", value: "new" }]);
      await received.count(1);
      await pause(300);
      expect(received.values()).to.deep.equal(["new"]);
    });

    describe("keyed mode", () => {
      it("takes exactly one of handler and keyed, with positive bounds", async () => {
        const bus = await open();
        const jobs = topic("mode");
        await bus.ensureTopics([{ name: jobs, partitions: 1 }]);
        const handler = async (): Promise<void> => {};
        const attempts = [
          bus.consume({ groupId: group("neither"), topics: [jobs] }),
          bus.consume({ groupId: group("both"), topics: [jobs], handler, keyed: { handler } }),
          bus.consume({ groupId: group("bound"), topics: [jobs], keyed: { handler, maxBatch: 0 } }),
        ];
        const errors = await Promise.all(
          attempts.map((attempt) =>
            attempt.then(
              () => undefined,
              (error: unknown) => error,
            ),
          ),
        );
        expect(errors[0]).to.be.instanceOf(TypeError);
        expect(errors[1]).to.be.instanceOf(TypeError);
        expect(errors[2]).to.be.instanceOf(RangeError);
      });

      it("splits a group's partitions between two keyed members, no record handled by both", async () => {
        const nodeA = await open();
        const nodeB = await open();
        const work = topic("keyed-split");
        await nodeA.ensureTopics([{ name: work, partitions: 4 }]);
        const shared = group("keyed-split");
        const byA = new Calls();
        const byB = new Calls();
        await consume(nodeA, { groupId: shared, topics: [work], keyed: { handler: async (records) => byA.add(records) } });
        await consume(nodeB, { groupId: shared, topics: [work], keyed: { handler: async (records) => byB.add(records) } });
        await nodeA.publish(
          work,
          Array.from({ length: 40 }, (_, i) => ({ key: `source-${i % 20}`, value: `source-${i % 20}:${i}` })),
        );
        const total = (): number => byA.received.records.length + byB.received.records.length;
        for (const deadline = Date.now() + 20_000; total() < 40 && Date.now() < deadline;) await pause(20);
        await pause(300);
        expect(total(), "records handled in total").to.equal(40);
        expect(byA.received.records.length, "jobs on A").to.be.greaterThan(0);
        expect(byB.received.records.length, "jobs on B").to.be.greaterThan(0);
        const partitionsA = new Set(byA.received.records.map((r) => r.partition));
        expect(byB.received.records.filter((r) => partitionsA.has(r.partition))).to.deep.equal([]);
      });

      it("starts a new keyed group at the end when fromBeginning is false", async () => {
        const bus = await open();
        const emits = topic("keyed-latest");
        await bus.ensureTopics([{ name: emits, partitions: 1 }]);
        await bus.publish(emits, [{ key: "k", value: "old" }]);
        const calls = new Calls();
        await consume(bus, {
          groupId: group("keyed-latest"),
          topics: [emits],
          fromBeginning: false,
          keyed: { handler: async (records) => calls.add(records) },
        });
        await bus.publish(emits, [{ key: "k", value: "new" }]);
        await calls.received.count(1);
        await pause(300);
        expect(calls.received.values()).to.deep.equal(["new"]);
      });

      it("does not let a key whose handler never settles delay another key of the same partition", async () => {
        const bus = await open();
        const invocations = topic("fair");
        await bus.ensureTopics([{ name: invocations, partitions: 4 }]);
        const [stuck, other] = keysOnPartition(2, 4, 1);
        const never = deferred();
        const calls = new Calls();
        try {
          await consume(bus, {
            groupId: group("fair"),
            topics: [invocations],
            keyed: {
              handler: async (records) => {
                calls.add(records);
                if (records[0].key === stuck) await never.promise;
              },
            },
          });
          await bus.publish(invocations, [{ key: stuck, value: `${stuck}:0` }]);
          await calls.received.count(1);
          await bus.publish(invocations, [
            { key: other, value: `${other}:0` },
            { key: stuck, value: `${stuck}:1` },
            { key: other, value: `${other}:1` },
          ]);
          await calls.received.until((records) => records.filter((r) => r.key === other).length === 2, `both records of ${other}`, 10_000);
          expect(calls.of(other).flat()).to.deep.equal([`${other}:0`, `${other}:1`]);
          // The stuck key's second record waits for its first call, which never ends.
          expect(calls.of(stuck)).to.deep.equal([[`${stuck}:0`]]);
          expect(calls.received.records.every((r) => r.partition === 1)).to.equal(true);
        } finally {
          never.resolve();
        }
      });

      it("keeps per-key order across many keys and batches, never running one key twice at once", async () => {
        const bus = await open();
        const emits = topic("keyed-order");
        await bus.ensureTopics([{ name: emits, partitions: 2 }]);
        const keys = Array.from({ length: 12 }, (_, i) => `emitter-${i}`);
        const perKey = 25;
        const calls = new Calls();
        const running = new Set<string>();
        const overlaps: string[] = [];
        const runningPerPartition = new Map<number, number>();
        let mostAtOnceInOnePartition = 0;
        await consume(bus, {
          groupId: group("keyed-order"),
          topics: [emits],
          keyed: {
            maxBatch: 7,
            handler: async (records) => {
              const { key, partition } = records[0];
              if (running.has(key)) overlaps.push(key);
              running.add(key);
              const now = (runningPerPartition.get(partition) ?? 0) + 1;
              runningPerPartition.set(partition, now);
              mostAtOnceInOnePartition = Math.max(mostAtOnceInOnePartition, now);
              await pause(2 + (records.length % 4));
              runningPerPartition.set(partition, runningPerPartition.get(partition)! - 1);
              running.delete(key);
              calls.add(records);
            },
          },
        });
        for (let round = 0; round < perKey; round += 5) {
          const batch = [];
          for (let n = round; n < round + 5; n++) for (const key of keys) batch.push({ key, value: `${key}:${n}` });
          await bus.publish(emits, batch);
        }
        await calls.received.count(keys.length * perKey, 60_000);
        for (const key of keys) {
          const sequence = calls
            .of(key)
            .flat()
            .map((value) => Number(value.split(":")[1]));
          expect(sequence, key).to.deep.equal(Array.from({ length: perKey }, (_, n) => n));
        }
        expect(
          calls.calls.every((values) => values.length <= 7),
          "batches of at most maxBatch",
        ).to.equal(true);
        expect(overlaps, "keys with two calls at once").to.deep.equal([]);
        expect(mostAtOnceInOnePartition, "calls running at once in one partition").to.be.greaterThan(1);
      });

      it("hands over every record that waited for a key's running call, in order, at most maxBatch per call", async () => {
        const bus = await open();
        const deliveries = topic("batching");
        await bus.ensureTopics([{ name: deliveries, partitions: 2 }]);
        const [held, marker] = keysOnPartition(2, 2, 0, "listener");
        const firstCall = deferred();
        const release = deferred();
        const calls = new Calls();
        await consume(bus, {
          groupId: group("batching"),
          topics: [deliveries],
          keyed: {
            maxBatch: 20,
            handler: async (records) => {
              const first = calls.of(held).length === 0 && records[0].key === held;
              calls.add(records);
              if (first) {
                firstCall.resolve();
                await release.promise;
              }
            },
          },
        });
        await bus.publish(deliveries, [{ key: held, value: `${held}:0` }]);
        await firstCall.promise;
        const rest = Array.from({ length: 50 }, (_, i) => ({ key: held, value: `${held}:${i + 1}` }));
        // The marker comes after the 50 in the partition: once it was handed over, all 50 were read.
        await bus.publish(deliveries, [...rest, { key: marker, value: `${marker}:0` }]);
        await calls.received.until((records) => records.some((r) => r.key === marker), "the marker");
        expect(calls.of(held)).to.have.length(1);
        release.resolve();
        await calls.received.until((records) => records.filter((r) => r.key === held).length === 51, "all 51 records of the held key");
        const batches = calls.of(held);
        expect(batches.map((values) => values.length)).to.deep.equal([1, 20, 20, 10]);
        expect(batches.flat()).to.deep.equal(Array.from({ length: 51 }, (_, i) => `${held}:${i}`));
      });

      it("commits the contiguous completed prefix only: a crash redelivers the unfinished key and everything after it", async () => {
        const nodeA = await open();
        const jobs = topic("prefix");
        const workers = group("prefix");
        await nodeA.ensureTopics([{ name: jobs, partitions: 1 }]);
        const never = deferred();
        const first = new Calls();
        try {
          await nodeA.consume({
            groupId: workers,
            topics: [jobs],
            keyed: {
              handler: async (records) => {
                first.add(records);
                if (records[0].key === "a") await never.promise;
              },
            },
          });
          // Offsets: b:0 at 0, a:0 at 1, b:1 at 2, b:2 at 3.
          await nodeA.publish(jobs, [
            { key: "b", value: "b:0" },
            { key: "a", value: "a:0" },
            { key: "b", value: "b:1" },
            { key: "b", value: "b:2" },
          ]);
          await first.received.count(4);
          // Time for the coalesced commit of offset 1 (b:0 done, a:0 running).
          await pause(1000);
          await nodeA.close();

          const nodeB = await open();
          const second = new Calls();
          await nodeB.consume({ groupId: workers, topics: [jobs], keyed: { handler: async (records) => second.add(records) } });
          await second.received.count(3);
          await pause(500);
          expect(second.received.values().sort()).to.deep.equal(["a:0", "b:1", "b:2"]);
          expect(second.received.records.map((r) => r.offset).sort()).to.deep.equal(["1", "2", "3"]);
          // Everything finished now: after its commit, a crash redelivers nothing.
          await pause(1000);
          await nodeB.close();

          const nodeC = await open();
          const third = new Calls();
          await consume(nodeC, { groupId: workers, topics: [jobs], keyed: { handler: async (records) => third.add(records) } });
          await nodeC.publish(jobs, [{ key: "c", value: "c:0" }]);
          await third.received.count(1);
          await pause(500);
          expect(third.received.values()).to.deep.equal(["c:0"]);
        } finally {
          never.resolve();
        }
      });

      it("retries a rejected batch with the same records while other keys of the partition go on", async () => {
        const logged: BusLogEntry[] = [];
        const bus = await open((entry) => logged.push(entry));
        const deliveries = topic("keyed-retry");
        await bus.ensureTopics([{ name: deliveries, partitions: 1 }]);
        const attempts: { values: string[]; at: number }[] = [];
        const calls = new Calls();
        const firstFailure = deferred();
        await consume(bus, {
          groupId: group("keyed-retry"),
          topics: [deliveries],
          retry: { initialMs: 400, maxMs: 800 },
          keyed: {
            handler: async (records) => {
              if (records[0].key === "flaky") {
                attempts.push({ values: records.map((r) => r.value.toString()), at: Date.now() });
                if (attempts.length < 3) {
                  firstFailure.resolve();
                  throw new Error("receiver returned 503");
                }
              }
              calls.add(records);
            },
          },
        });
        await bus.publish(deliveries, [
          { key: "flaky", value: "flaky:0" },
          { key: "flaky", value: "flaky:1" },
          { key: "steady", value: "steady:0" },
        ]);
        await firstFailure.promise;
        await bus.publish(deliveries, [{ key: "steady", value: "steady:1" }]);
        await calls.received.until((records) => records.some((r) => r.key === "flaky"), "the flaky batch");
        expect(attempts.map((attempt) => attempt.values)).to.deep.equal([
          ["flaky:0", "flaky:1"],
          ["flaky:0", "flaky:1"],
          ["flaky:0", "flaky:1"],
        ]);
        // The other key was handled while the flaky one waited for its retries.
        expect(calls.received.values()).to.deep.equal(["steady:0", "steady:1", "flaky:0", "flaky:1"]);
        expect(attempts[1].at - attempts[0].at).to.be.at.least(190);
        const failures = logged.filter((entry) => entry.level === "error" && /failed/.test(entry.message));
        expect(failures).to.have.length(2);
        expect((failures[0].error as Error).message).to.equal("receiver returned 503");
      });

      it("pauses reading at maxPendingPerPartition and resumes once handlers complete", async () => {
        const bus = await open();
        const jobs = topic("bounded");
        await bus.ensureTopics([{ name: jobs, partitions: 1 }]);
        const held: (() => void)[] = [];
        let released = false;
        let outstanding = 0;
        let mostOutstanding = 0;
        const calls = new Calls();
        await consume(bus, {
          groupId: group("bounded"),
          topics: [jobs],
          keyed: {
            maxPendingPerPartition: 10,
            handler: async (records) => {
              outstanding += records.length;
              mostOutstanding = Math.max(mostOutstanding, outstanding);
              calls.add(records);
              if (!released) await new Promise<void>((resolve) => held.push(resolve));
              outstanding -= records.length;
            },
          },
        });
        await bus.publish(
          jobs,
          Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: `k${i}:0` })),
        );
        await calls.received.count(10);
        // Long enough for several fetches (Kafka waits up to 1 s per fetch).
        await pause(2500);
        expect(calls.received.records).to.have.length(10);
        released = true;
        for (const release of held.splice(0)) release();
        await calls.received.count(30, 30_000);
        expect(mostOutstanding).to.be.at.most(10);
        expect(calls.received.values()).to.deep.equal(Array.from({ length: 30 }, (_, i) => `k${i}:0`));
      });

      it("lets a graceful stop finish running calls and commit them, leaving waiting records for the next consumer", async () => {
        const nodeA = await open();
        const jobs = topic("keyed-drain");
        const workers = group("keyed-drain");
        await nodeA.ensureTopics([{ name: jobs, partitions: 1 }]);
        const started = deferred();
        const finished: string[] = [];
        const calls = new Calls();
        const consumerA = await nodeA.consume({
          groupId: workers,
          topics: [jobs],
          keyed: {
            handler: async (records) => {
              calls.add(records);
              if (records[0].value.toString() === "a:0") {
                started.resolve();
                await pause(300);
              }
              finished.push(...records.map((r) => r.value.toString()));
            },
          },
        });
        await nodeA.publish(jobs, [{ key: "a", value: "a:0" }]);
        await started.promise;
        // a:1 waits behind a:0's call; b:0 after it is handled at once, so a:1 was read by then.
        await nodeA.publish(jobs, [
          { key: "a", value: "a:1" },
          { key: "b", value: "b:0" },
        ]);
        await calls.received.until((records) => records.some((r) => r.key === "b"), "b:0");
        await consumerA.stop();
        expect(finished.sort()).to.deep.equal(["a:0", "b:0"]);

        const received = new Calls();
        await consume(nodeA, { groupId: workers, topics: [jobs], keyed: { handler: async (records) => received.add(records) } });
        await received.received.count(2);
        await pause(300);
        // a:0 was committed by the stop; a:1 never ran, so it and everything after it come again.
        expect(received.received.values().sort()).to.deep.equal(["a:1", "b:0"]);
      });
    });

    describe("request/reply", () => {
      it("carries a request to another node and its reply back", async () => {
        const api = await open();
        const runner = await open();
        const requests = topic("http");
        await api.ensureTopics([{ name: requests, partitions: 2 }]);
        consumers.push(
          await serveRequests({
            bus: runner,
            groupId: group("responders"),
            topics: [requests],
            respond: async (request) => ({
              value: JSON.stringify({ status: 200, body: `hello ${request.value.toString()}` }),
              headers: { "source-id": request.key },
            }),
          }),
        );
        const channel = await openReplyChannel({ bus: api, nodeId: `api-${unique}` });
        try {
          const replies = await Promise.all(
            ["ann", "bob", "cy"].map((name, i) => channel.request(requests, { key: `dc_${i}`, value: name }, { timeoutMs: 20_000 })),
          );
          // Answered over the bus: bytes (a reply handed over in-process carries `decoded` instead).
          const bodies = replies.map((reply) =>
            "value" in reply ? JSON.parse(reply.value.toString()).body : expect.fail("not over the bus"),
          );
          expect(bodies).to.deep.equal(["hello ann", "hello bob", "hello cy"]);
          expect(replies.map((reply) => reply.headers["source-id"])).to.deep.equal(["dc_0", "dc_1", "dc_2"]);
          expect(replies[0].headers[replyHeaders.correlationId]).to.match(/^[0-9a-f-]{36}$/);
        } finally {
          await channel.close();
        }
      });

      it("rejects with ReplyTimeoutError when nobody answers in time", async () => {
        const api = await open();
        const requests = topic("unanswered");
        await api.ensureTopics([{ name: requests, partitions: 1 }]);
        const channel = await openReplyChannel({ bus: api, nodeId: `api-${unique}` });
        try {
          const started = Date.now();
          const error = await channel.request(requests, { key: "dc_1", value: "ping" }, { timeoutMs: 300 }).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error).to.be.instanceOf(ReplyTimeoutError);
          expect(Date.now() - started).to.be.at.least(290);
        } finally {
          await channel.close();
        }
      });
    });
  });
}
