// A separate process consuming from Kafka, for tests that freeze it (SIGSTOP) or kill it:
//   node kafkaNode.js <brokers> <topic> <group>
// prints "ready" once in its group, then "handling <value>" per record; "slow" takes 2 s.
import { openKafkaBus } from "../../src/bus/kafka/index.js";

const [brokers, topic, groupId] = process.argv.slice(2);
const bus = await openKafkaBus({
  brokers: brokers.split(","),
  clientId: "kafka-node",
  sessionTimeoutMs: 6000,
  log: (entry) => {
    if (entry.level === "error") process.stderr.write(`[kafka-node] ${entry.message}\n`);
  },
});
await bus.consume({
  groupId: groupId,
  topics: [topic],
  retry: { initialMs: 100, maxMs: 1000 },
  handler: async (record) => {
    const value = record.value.toString();
    process.stdout.write(`handling ${value}\n`);
    if (value === "slow") await new Promise((resolve) => setTimeout(resolve, 2000));
  },
});
process.stdout.write("ready\n");
setInterval(() => {}, 1 << 30);
