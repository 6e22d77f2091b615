import type { EventStore } from "../../src/store/eventStore.js";
import { openEsdbEventStore } from "../../src/store/esdb/esdbEventStore.js";
import { describeEventStoreContract } from "./contract.js";

// No EventStoreDB/KurrentDB server can run on the build machines. Against a server (e.g. one from
// docker-compose.yml): EVENTSTORE_URL='kurrentdb://127.0.0.1:2113?tls=false' npm test
const url = process.env.EVENTSTORE_URL;

if (url === undefined || url === "") {
  describe("event store contract: esdb", function () {
    it("NOT RUN: EVENTSTORE_URL is not set, so the contract suite did not run against EventStoreDB/KurrentDB");
  });
} else {
  describeEventStoreContract(
    "esdb",
    async () => {
      const opened: EventStore[] = [];
      const open = async () => {
        const store = openEsdbEventStore({ connectionString: url });
        opened.push(store);
        return store;
      };
      // The server is shared and cannot be reset: the suite uses fresh stream names per test.
      return { store: await open(), openAnother: open, dispose: async () => void (await Promise.all(opened.map((s) => s.close()))) };
    },
    {
      timeoutMs: 60000,
      noCrossStreamIdCheck: "EventStoreDB has no index of event ids across streams (see docs/decisions.md, Event store)",
    },
  );
}
