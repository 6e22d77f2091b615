// Starts a throwaway Kafka broker for manual use and prints its address until killed:
//   node dist/test/harness/kafka-cli.js
import { startKafka } from "./kafka.js";

const started = Date.now();
const broker = await startKafka();
process.stdout.write(
  `Kafka ${broker.version} ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n` +
    `KAFKA_BROKERS=${broker.brokers.join(",")}\n` +
    `broker pid: ${broker.pid}, log: ${broker.logFile}\n` +
    "Ctrl-C to stop.\n",
);
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void broker.stop().then(() => process.exit(0));
  });
}
// Keeps the event loop alive until a signal arrives.
setInterval(() => {}, 1 << 30);
