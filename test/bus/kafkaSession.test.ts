// Kafka only: kafkajs heartbeats between records, so a handler running longer than the session
// timeout would get its member evicted and the record handled twice unless the adapter keeps
// heartbeating while the handler runs.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openKafkaBus } from "../../src/bus/kafka/index.js";
import { sharedKafka } from "../harness/kafka.js";

const nodeScript = path.join(path.dirname(fileURLToPath(import.meta.url)), "kafkaNode.js");

describe("Kafka bus group membership", function () {
  this.timeout(90_000);

  it("keeps a member whose handler outlasts the session timeout, so the record is handled once", async () => {
    const { brokers } = await sharedKafka();
    const bus = await openKafkaBus({ brokers, clientId: "session-test", sessionTimeoutMs: 6000, heartbeatIntervalMs: 1000 });
    try {
      const topic = `t-session-${randomUUID().slice(0, 8)}`;
      await bus.ensureTopics([{ name: topic, partitions: 1 }]);
      const handled: string[] = [];
      let done!: () => void;
      const bothDone = new Promise<void>((resolve) => (done = resolve));
      await bus.consume({
        groupId: `g-${topic}`,
        topics: [topic],
        handler: async (record) => {
          const value = record.value.toString();
          handled.push(value);
          if (value === "slow") await new Promise((resolve) => setTimeout(resolve, 9000));
          if (value === "after") done();
        },
      });
      await bus.publish(topic, [
        { key: "source", value: "slow" },
        { key: "source", value: "after" },
      ]);
      await bothDone;
      // Long enough for a redelivery to show up if the commit had been refused.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      expect(handled).to.deep.equal(["slow", "after"]);
    } finally {
      await bus.close();
    }
  });

  it("recovers a member evicted while frozen: the record is redelivered and consumption goes on", async () => {
    const { brokers } = await sharedKafka();
    const bus = await openKafkaBus({ brokers, clientId: "eviction-test" });
    const topic = `t-evict-${randomUUID().slice(0, 8)}`;
    await bus.ensureTopics([{ name: topic, partitions: 1 }]);
    const child = spawn(process.execPath, ["--no-node-snapshot", nodeScript, brokers.join(","), topic, `g-${topic}`], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    let errors = "";
    const waiters: (() => void)[] = [];
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      for (const wake of waiters.splice(0)) wake();
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (errors += chunk));
    const printed = async (pattern: RegExp, what: string): Promise<void> => {
      const deadline = Date.now() + 40_000;
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`no ${what}; output ${JSON.stringify(output)}, errors ${JSON.stringify(errors)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500);
        });
      }
    };
    try {
      await printed(/ready\n/, "ready");
      await bus.publish(topic, [{ key: "source", value: "slow" }]);
      await printed(/handling slow\n/, "first delivery");
      // Frozen past the 6 s session timeout while its handler runs: the broker evicts it.
      child.kill("SIGSTOP");
      await new Promise((resolve) => setTimeout(resolve, 9000));
      child.kill("SIGCONT");
      await printed(/handling slow\n[^]*handling slow\n/, "redelivery of the uncommitted record");
      await bus.publish(topic, [{ key: "source", value: "after" }]);
      await printed(/handling after\n/, "a later record");
      expect(output.match(/handling slow/g)).to.have.length(2);
    } finally {
      child.kill("SIGKILL");
      await bus.close();
    }
  });
});
