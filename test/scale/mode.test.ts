import { expect } from "chai";
import fs from "node:fs";
import path from "node:path";
import kafkajs from "kafkajs";
import { TestServer } from "../harness/server.js";
import { sharedKafka } from "../harness/kafka.js";
import { openEventStore } from "../../src/store/open.js";
import { INVOCATIONS_TOPIC } from "../../src/runner/invocations.js";

// The source suites run twice (npm test): these check that each test mode really runs on its engines.
describe("scale: test modes", function () {
  this.timeout(120_000);

  const issueKey = async (server: TestServer) => {
    const r = await server.client().post("/v1/users/me/api_keys", { name: "mode check" });
    expect(r.status).to.equal(200);
    return r.body.data.id as string;
  };
  const logged = async (server: TestServer, keyId: string) => {
    const store = await openEventStore(server.eventStoreUrl);
    try {
      return (await store.readAll()).some((e) => e.type === "ApiKeyIssued" && (e.data as { id: string }).id === keyId);
    } finally {
      await store.close();
    }
  };

  it("embedded: the log and the bus are SQLite files in the data directory", async () => {
    const server = new TestServer({ mode: "embedded" });
    await server.start();
    try {
      const keyId = await issueKey(server);
      expect(server.eventStoreUrl).to.equal(`sqlite:${path.join(server.dataDir, "events.db")}`);
      expect(await logged(server, keyId)).to.equal(true);
      expect(fs.existsSync(path.join(server.dataDir, "bus.db"))).to.equal(true);
    } finally {
      await server.stop();
    }
  });

  it("scaled: the log is a PostgreSQL schema and the bus is Kafka, nothing of either in the data directory", async () => {
    const server = new TestServer({ mode: "scaled" });
    await server.start();
    try {
      const keyId = await issueKey(server);
      expect(server.eventStoreUrl).to.match(/^postgres:\/\/.*\?schema=hw_test_[0-9a-f]{16}$/);
      expect(await logged(server, keyId)).to.equal(true);
      expect(fs.readdirSync(server.dataDir).filter((f) => f.startsWith("events.db") || f.startsWith("bus.db"))).to.deep.equal([]);
      const admin = new kafkajs.Kafka({
        clientId: "mode-test",
        brokers: (await sharedKafka()).brokers,
        logLevel: kafkajs.logLevel.NOTHING,
      }).admin();
      await admin.connect();
      try {
        const topics = await admin.listTopics();
        expect(topics).to.include(`${server.cluster!.busNamespace}.${INVOCATIONS_TOPIC}`);
        expect(topics).to.include(`${server.cluster!.busNamespace}.headwater.replies.${server.nodeId}`);
      } finally {
        await admin.disconnect();
      }
    } finally {
      await server.stop();
    }
  });
});
