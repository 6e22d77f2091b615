import { randomUUID } from "node:crypto";
import { openKafkaBus } from "../../src/bus/kafka/index.js";
import { sharedKafka } from "../harness/kafka.js";
import { describeBusContract } from "./contract.js";

// No skip: when the broker cannot start, the fixture throws and every test here fails.
describeBusContract(
  "Kafka (kafkajs, real broker)",
  async () => {
    const { brokers } = await sharedKafka();
    return {
      open: (options) => openKafkaBus({ brokers, clientId: `headwater-test-${randomUUID().slice(0, 8)}`, ...options }),
      dispose: async () => {},
    };
  },
  { timeoutMs: 60_000 },
);
