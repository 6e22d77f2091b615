// Kafka only: keyed consumption across rebalances. A partition the member keeps is not handed
// over twice (kafkajs fetches it again from the committed offset), a partition it loses stops
// committing and goes to the new owner from the committed offset, and when it comes back, a key
// whose old call still runs waits for that call.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import kafkajs from "kafkajs";
import type { Bus, BusRecord } from "../../src/bus/bus.js";
import { openKafkaBus } from "../../src/bus/kafka/index.js";
import { partitionForKey } from "../../src/bus/partition.js";
import { sharedKafka } from "../harness/kafka.js";

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(20);
  }
}

/** A keyed consumer's view: every call's values, and the calls held until the test releases them. */
class Member {
  readonly calls: string[][] = [];
  readonly held = new Map<string, Deferred>();

  constructor(private readonly hold: (records: readonly BusRecord[]) => boolean) {}

  readonly handler = async (records: readonly BusRecord[]): Promise<void> => {
    const values = records.map((record) => record.value.toString());
    this.calls.push(values);
    if (!this.hold(records)) return;
    const gate = deferred();
    this.held.set(values[0], gate);
    await gate.promise;
  };

  values(): string[] {
    return this.calls.flat();
  }

  release(value: string): void {
    const gate = this.held.get(value);
    if (!gate) throw new Error(`no held call starts with ${value}; held: ${[...this.held.keys()].join(", ")}`);
    gate.resolve();
  }

  releaseAll(): void {
    for (const gate of this.held.values()) gate.resolve();
  }
}

describe("Kafka bus keyed mode across rebalances", function () {
  this.timeout(120_000);

  it("keeps a kept partition's dispatcher, stops committing a lost one, and makes a regained key wait for its old call", async () => {
    const { brokers } = await sharedKafka();
    const unique = randomUUID().slice(0, 8);
    const topic = `t-keyed-rebalance-${unique}`;
    const groupId = `g-${topic}`;
    const keys = [0, 1].map((p) => {
      const found: string[] = [];
      for (let i = 0; found.length < 2; i++) if (partitionForKey(`k${i}`, 2) === p) found.push(`k${i}`);
      return found as [string, string];
    });
    const admin = new kafkajs.Kafka({ brokers, clientId: `admin-${unique}`, logLevel: kafkajs.logLevel.NOTHING }).admin();
    const nodes: Bus[] = [];
    const a = new Member((records) => records[0].value.toString().endsWith(":0"));
    const b = new Member(() => true);
    const committed = async (partition: number): Promise<string> => {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
      return offsets.partitions.find((p) => p.partition === partition)!.offset;
    };
    try {
      await admin.connect();
      const nodeA = await openKafkaBus({ brokers, clientId: `a-${unique}` });
      const nodeB = await openKafkaBus({ brokers, clientId: `b-${unique}` });
      nodes.push(nodeA, nodeB);
      await nodeA.ensureTopics([{ name: topic, partitions: 2 }]);
      await nodeA.consume({ groupId, topics: [topic], keyed: { handler: a.handler } });
      await nodeA.publish(
        topic,
        keys.flat().map((key) => ({ key, value: `${key}:0` })),
      );
      await until(() => a.calls.length === 4, "A's four calls");

      // B joins: one partition moves to B, which gets its records again from the committed offset.
      const consumerB = await nodeB.consume({ groupId, topics: [topic], keyed: { handler: b.handler } });
      await until(() => b.calls.length === 2, "B's two calls");
      const moved = partitionForKey(b.calls[0][0].split(":")[0], 2);
      const kept = 1 - moved;
      const [xMoved, yMoved] = keys[moved];
      const [xKept, yKept] = keys[kept];
      expect(b.values().sort()).to.deep.equal([`${xMoved}:0`, `${yMoved}:0`].sort());

      // A's call on the lost partition finishes, but A no longer commits there.
      a.release(`${xMoved}:0`);
      await pause(1500);
      expect(await committed(moved), "offset of the moved partition after A's late completion").to.equal("-1");
      b.releaseAll();
      const movedCommit = (async () => {
        for (const deadline = Date.now() + 10_000; Date.now() < deadline; await pause(100)) {
          if ((await committed(moved)) === "2") return true;
        }
        return false;
      })();
      expect(await movedCommit, "B commits the moved partition").to.equal(true);

      // B leaves: the partition comes back to A, whose old call of yMoved still runs.
      await consumerB.stop();
      await nodeA.publish(topic, [
        { key: xMoved, value: `${xMoved}:1` },
        { key: yMoved, value: `${yMoved}:1` },
      ]);
      await until(() => a.values().includes(`${xMoved}:1`), `${xMoved}:1 on A`);
      await pause(1000);
      expect(a.values(), "the regained key waits for its old call").not.to.include(`${yMoved}:1`);
      a.release(`${yMoved}:0`);
      await until(() => a.values().includes(`${yMoved}:1`), `${yMoved}:1 on A after its old call`);

      // The kept partition was fetched again after each rebalance, but nothing was handed over twice.
      expect(
        a
          .values()
          .filter((value) => value === `${xKept}:0` || value === `${yKept}:0`)
          .sort(),
      ).to.deep.equal([`${xKept}:0`, `${yKept}:0`].sort());
      expect(await committed(kept), "nothing committed while the kept partition's calls run").to.equal("-1");
      a.releaseAll();
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await pause(100)) {
        if ((await committed(kept)) === "2" && (await committed(moved)) === "4") break;
      }
      expect([await committed(kept), await committed(moved)]).to.deep.equal(["2", "4"]);
      expect(
        a.values().filter((value) => value.startsWith(`${xKept}:`) || value.startsWith(`${yKept}:`)),
        "kept partition handed over once",
      ).to.have.length(2);
    } finally {
      a.releaseAll();
      b.releaseAll();
      await Promise.all(nodes.map((node) => node.close()));
      await admin.disconnect();
    }
  });
});
