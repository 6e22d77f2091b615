// A separate process using the embedded bus, for tests that kill it with SIGKILL:
//   node embeddedNode.js <file> publish <topic> <value>...   publishes, prints "published", waits
//   node embeddedNode.js <file> consume <topic> <group>      prints "handling <value>", never finishes
import { openEmbeddedBus } from "../../src/bus/embedded/index.js";

const [file, mode, topic, ...rest] = process.argv.slice(2);
const bus = await openEmbeddedBus({ file: file });
await bus.ensureTopics([{ name: topic, partitions: 2 }]);
if (mode === "publish") {
  await bus.publish(
    topic,
    rest.map((value) => ({ key: "emitter-1", value })),
  );
  process.stdout.write("published\n");
} else {
  await bus.consume({
    groupId: rest[0],
    topics: [topic],
    handler: (record) => {
      process.stdout.write(`handling ${record.value.toString()}\n`);
      return new Promise(() => {});
    },
  });
}
setInterval(() => {}, 1 << 30);
