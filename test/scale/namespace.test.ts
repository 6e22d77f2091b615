import { expect } from "chai";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { sharedKafka } from "../harness/kafka.js";
import { openBus } from "../../src/bus/open.js";
import type { Bus, BusRecord } from "../../src/bus/bus.js";

// Two deployments on one Kafka cluster: same topic and group names, separate namespaces.
describe("scale: bus namespaces on one Kafka cluster", function () {
  this.timeout(120_000);
  const open = async (url: string): Promise<Bus> =>
    openBus(url, { file: path.join(os.tmpdir(), "unused-bus.db"), clientId: `ns-test-${randomBytes(3).toString("hex")}` });

  it("keeps each namespace's topics and groups apart, and hands records back under the caller's names", async () => {
    const { brokers } = await sharedKafka();
    const [ns1, ns2] = [`a${randomBytes(4).toString("hex")}`, `b${randomBytes(4).toString("hex")}`];
    const one = await open(`kafka://${brokers.join(",")}?namespace=${ns1}`);
    const two = await open(`kafka://${brokers.join(",")}/?namespace=${ns2}`);
    try {
      const seen: Record<string, BusRecord[]> = { one: [], two: [] };
      for (const [name, bus] of [
        ["one", one],
        ["two", two],
      ] as const) {
        await bus.ensureTopics([{ name: "work", partitions: 2 }]);
        await bus.consume({ groupId: "workers", topics: ["work"], handler: async (r) => void seen[name].push(r) });
      }
      await one.publish("work", [{ key: "k", value: "for one" }]);
      await two.publish("work", [{ key: "k", value: "for two" }]);
      const deadline = Date.now() + 30_000;
      while ((seen.one.length < 1 || seen.two.length < 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 500)); // a leak across namespaces would show up by now
      expect(seen.one.map((r) => [r.topic, r.value.toString()])).to.deep.equal([["work", "for one"]]);
      expect(seen.two.map((r) => [r.topic, r.value.toString()])).to.deep.equal([["work", "for two"]]);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("refuses unknown parameters and bad namespaces in HEADWATER_BUS", async () => {
    const { brokers } = await sharedKafka();
    for (const url of [`kafka://${brokers[0]}?prefix=x`, `kafka://${brokers[0]}?namespace=a.b`, "kafka://?namespace=x"]) {
      let error: unknown;
      try {
        await (await open(url)).close();
      } catch (e) {
        error = e;
      }
      expect(error, url).to.be.instanceOf(Error);
    }
  });
});
