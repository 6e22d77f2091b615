// Kafka only: concurrent publishes share produce requests (the linger window), each caller's
// promise settles with its own request, and one publish too large for the broker fails alone.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import type { BusLogEntry, BusRecord } from "../../src/bus/bus.js";
import { openKafkaBus } from "../../src/bus/kafka/index.js";
import { sharedKafka } from "../harness/kafka.js";

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("Kafka bus produce batching", function () {
  this.timeout(90_000);

  it("sends concurrent publishes in few produce requests, keeping per-key order", async () => {
    const { brokers } = await sharedKafka();
    const logged: BusLogEntry[] = [];
    const bus = await openKafkaBus({ brokers, clientId: "produce-batching", log: (entry) => logged.push(entry) });
    try {
      const topic = `t-produce-${randomUUID().slice(0, 8)}`;
      await bus.ensureTopics([{ name: topic, partitions: 4 }]);
      // Connects the producer, so the burst below is not held up behind the connection.
      await bus.publish(topic, [{ key: "warm-up", value: "0" }]);
      const requestsBefore = logged.filter((entry) => /^produce request/.test(entry.message)).length;
      const keys = Array.from({ length: 20 }, (_, i) => `source-${i}`);
      const perKey = 20;
      const publishes: Promise<void>[] = [];
      for (let n = 0; n < perKey; n++) for (const key of keys) publishes.push(bus.publish(topic, [{ key, value: `${key}:${n}` }]));
      await Promise.all(publishes);
      const requests = logged.filter((entry) => /^produce request/.test(entry.message)).length - requestsBefore;
      expect(requests, "produce requests for 400 publishes").to.be.at.least(1).and.at.most(40);

      const records: BusRecord[] = [];
      await bus.consume({ groupId: `g-${topic}`, topics: [topic], handler: async (record) => void records.push(record) });
      await until(() => records.length === keys.length * perKey + 1, "every record");
      for (const key of keys) {
        const sequence = records.filter((r) => r.key === key).map((r) => Number(r.value.toString().split(":")[1]));
        expect(sequence, key).to.deep.equal(Array.from({ length: perKey }, (_, n) => n));
      }
    } finally {
      await bus.close();
    }
  });

  it("fails only the publish whose message the broker refuses as too large", async () => {
    const { brokers } = await sharedKafka();
    const bus = await openKafkaBus({ brokers, clientId: "produce-too-large", log: () => {} });
    try {
      const topic = `t-too-large-${randomUUID().slice(0, 8)}`;
      await bus.ensureTopics([{ name: topic, partitions: 1 }]);
      const settle = (publish: Promise<void>) =>
        publish.then(
          () => "ok",
          (error: unknown) => error,
        );
      const outcomes = await Promise.all([
        settle(bus.publish(topic, [{ key: "k", value: "before" }])),
        settle(bus.publish(topic, [{ key: "k", value: Buffer.alloc(2 * 1024 * 1024, 1) }])),
        settle(bus.publish(topic, [{ key: "k", value: "after" }])),
      ]);
      expect(outcomes[0]).to.equal("ok");
      expect(outcomes[1]).to.be.instanceOf(Error);
      expect(outcomes[2]).to.equal("ok");
      const records: BusRecord[] = [];
      await bus.consume({ groupId: `g-${topic}`, topics: [topic], handler: async (record) => void records.push(record) });
      await until(() => records.length === 2, "the two small records");
      expect(records.map((r) => r.value.toString())).to.deep.equal(["before", "after"]);
    } finally {
      await bus.close();
    }
  });
});
