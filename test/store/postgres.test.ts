import { expect } from "chai";
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { EventStore, RecordedEvent } from "../../src/store/eventStore.js";
import { openPostgresEventStore, type PostgresEventStoreOptions } from "../../src/store/postgres/postgresEventStore.js";
import { describeEventStoreContract } from "./contract.js";

// PostgreSQL always runs on this machine and in CI: when it is unreachable these tests fail, never skip.
const connectionString = process.env.HEADWATER_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A schema of its own per test, so runs on a shared database never collide. */
function temporarySchema() {
  const schema = `hw_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const opened: EventStore[] = [];
  const open = async (options: Partial<PostgresEventStoreOptions> = {}) => {
    const store = await openPostgresEventStore({ connectionString, schema, maxConnections: 3, ...options });
    opened.push(store);
    return store;
  };
  const dispose = async () => {
    await Promise.all(opened.map((store) => store.close()));
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await client.end();
    }
  };
  return { schema, open, dispose };
}

describeEventStoreContract("postgres", async () => {
  const { open, dispose } = temporarySchema();
  return { store: await open(), openAnother: () => open(), dispose };
});

describe("postgres event store", function () {
  let schema: ReturnType<typeof temporarySchema>;
  beforeEach(function () {
    schema = temporarySchema();
  });
  afterEach(async function () {
    await schema.dispose();
  });

  it("several processes opening a new schema at once migrate it once, without errors", async function () {
    const stores = await Promise.all([schema.open(), schema.open(), schema.open()]);
    await stores[0].append("s", [{ type: "A", data: {} }]);
    expect(await stores[2].streamRevision("s")).to.equal(0);
  });

  it("NOTIFY wakes a subscription when another store commits (safety poll off)", async function () {
    const reader = await schema.open({ safetyPollMs: 3_600_000 });
    const writer = await schema.open();
    const delivered: RecordedEvent[] = [];
    let wake: () => void = () => undefined;
    let arrived: Promise<void>;
    const subscription = reader.subscribeToAll({
      fromPosition: 0,
      onEvents: (events) => {
        delivered.push(...events);
        wake();
      },
    });
    try {
      // Both appends come after the subscription is tailing, so only NOTIFY can deliver them.
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (const type of ["A", "B"]) {
        arrived = new Promise<void>((resolve) => (wake = resolve));
        await writer.append("remote", [{ type, data: {} }]);
        await arrived;
      }
      expect(delivered.map((e) => e.type)).to.deep.equal(["A", "B"]);
    } finally {
      await subscription.stop();
    }
  });

  it("readers following $all from a checkpoint skip nothing while four stores commit concurrently", async function () {
    this.timeout(60000);
    const writers = await Promise.all([schema.open(), schema.open(), schema.open(), schema.open()]);
    const reader = await schema.open();
    let writing = true;
    const seen: number[] = [];
    // A bare polling reader, the way a projection on another node follows $all.
    const follow = (async () => {
      let checkpoint = 0;
      while (writing || checkpoint < (await reader.headPosition())) {
        const page = await reader.readAll({ fromPosition: checkpoint, maxCount: 50 });
        for (const event of page) seen.push(event.position);
        if (page.length > 0) checkpoint = page[page.length - 1].position;
      }
    })();
    await Promise.all(
      writers.flatMap((writer, w) =>
        Array.from({ length: 6 }, async (_, task) => {
          for (let n = 0; n < 25; n++) {
            await writer.append(`w${w}-${task % 2}`, [
              { type: "E", data: { w, task, n } },
              { type: "E", data: { w, task, n } },
            ]);
          }
        }),
      ),
    );
    writing = false;
    await follow;
    const all = (await reader.readAll()).map((e) => e.position);
    expect(all).to.have.length(4 * 6 * 25 * 2);
    expect(seen).to.deep.equal(all);
  });
});
