import { expect } from "chai";
import Database from "better-sqlite3";
import path from "node:path";
import { TestServer, testMode, type ApiClient } from "../harness/server.js";
import { deploy, eventually, events, me, sleep, type EventSummary } from "./sourcesSupport.js";
import kafkajs from "kafkajs";
import { partitionForKey } from "../../src/bus/partition.js";
import { sharedKafka } from "../harness/kafka.js";
import { INVOCATION_PARTITIONS, INVOCATIONS_TOPIC } from "../../src/runner/invocations.js";

// What running a source's waiting invocations as one batch (one sandbox entry, one append) keeps:
// per-source order, this.db and dedupe going on from run to run, each run's own outcome and
// custom response, quotas, back-pressure, and exactly one event per acknowledged request across
// a SIGKILL in the middle of a batch. A first slow run holds the source, so what arrives
// meanwhile waits and is taken as one batch.

/** Emits {n, count}: count is this.db's run counter, so it shows the db each run saw. Throws or hangs when asked. */
const COUNTER = `export default {
  name: "Counter", version: "1.0.0",
  props: { http: { type: "$.interface.http" }, db: "$.service.db" },
  async run(event) {
    const body = event.body ?? {};
    if (body.holdMs) await new Promise((r) => setTimeout(r, body.holdMs));
    const count = (this.db.get("count") ?? 0) + 1;
    this.db.set("count", count);
    if (body.fail) throw new Error("run " + body.n + " fails");
    if (body.hang) await new Promise(() => {});
    this.$emit({ n: body.n, count }, { summary: "n " + body.n });
  },
};`;

/** dedupe unique on body.key. */
const UNIQUE = `export default {
  name: "Unique", version: "1.0.0", dedupe: "unique",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    const body = event.body ?? {};
    if (body.holdMs) await new Promise((r) => setTimeout(r, body.holdMs));
    this.$emit({ n: body.n, key: body.key }, { id: body.key, summary: "key " + body.key });
  },
};`;

/** dedupe greatest on body.v. */
const GREATEST = `export default {
  name: "Greatest", version: "1.0.0", dedupe: "greatest",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    const body = event.body ?? {};
    if (body.holdMs) await new Promise((r) => setTimeout(r, body.holdMs));
    this.$emit({ v: body.v }, { id: body.v, summary: "v " + body.v });
  },
};`;

/** Answers each request with its own n, after its event is stored. */
const RESPONDER = `export default {
  name: "Responder", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const body = event.body ?? {};
    if (body.holdMs) await new Promise((r) => setTimeout(r, body.holdMs));
    this.$emit({ n: body.n });
    this.http.respond({ status: 200, headers: { "x-n": String(body.n) }, body: { n: body.n } });
  },
};`;

const endpointOf = (source: any): string => source.configured_props.http.endpoint_url as string;

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** The endpoints' token bucket out of the way: the bursts below are the point of these tests. */
const OPEN_ENDPOINTS = { HEADWATER_ENDPOINT_BURST: "1000", HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000" };

/** A server of its own for one test (these kill and restart it), stopped however the test ends. */
async function withServer(test: (server: TestServer) => Promise<void>): Promise<void> {
  const server = new TestServer({ env: OPEN_ENDPOINTS });
  await server.start();
  try {
    await test(server);
  } finally {
    await server.stop();
  }
}

/** Holds the source with a slow first run, then sends `bodies` one after another (in order) while it runs. */
async function burst(url: string, holdMs: number, bodies: unknown[]): Promise<number[]> {
  const first = await post(url, { n: 0, holdMs });
  const statuses = [first.status];
  for (const body of bodies) statuses.push((await post(url, body)).status);
  return statuses;
}

/** The run batch histogram from /metrics: how many batches, how many runs, and how many batches of more than one run. */
async function batchMetrics(server: TestServer): Promise<{ batches: number; runs: number; multi: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const value = (pattern: RegExp) => Number(text.match(pattern)?.[1] ?? "NaN");
  const batches = value(/^headwater_run_batch_size_count\{[^}]*\} (\S+)$/m);
  const single = value(/^headwater_run_batch_size_bucket\{le="1"[^}]*\} (\S+)$/m);
  return { batches, runs: value(/^headwater_run_batch_size_sum\{[^}]*\} (\S+)$/m), multi: batches - single };
}

describe("sources: runs in batches (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: {
      HEADWATER_RUN_TIMEOUT_MS: "2000",
      HEADWATER_ENDPOINT_BURST: "1000",
      HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000",
    },
  });
  let client: ApiClient;

  before(async () => {
    await server.start();
    client = server.client();
  });
  after(() => server.stop());

  it("a burst runs as batches, in order, each run seeing the db the one before it left", async () => {
    const source = await deploy(client, COUNTER);
    const before = await batchMetrics(server);
    const bodies = Array.from({ length: 40 }, (_, i) => ({ n: i + 1 }));
    const statuses = await burst(endpointOf(source), 1500, bodies);
    expect(statuses.every((s) => s === 200)).to.equal(true);
    const got = await eventually("41 events", async () => {
      const list = await events(client, source.id);
      return list.length >= 41 ? list : undefined;
    });
    expect(got.map((e) => e.event.n)).to.deep.equal(Array.from({ length: 41 }, (_, i) => i));
    expect(got.map((e) => e.event.count)).to.deep.equal(Array.from({ length: 41 }, (_, i) => i + 1));
    const after = await batchMetrics(server);
    expect(after.runs - before.runs, "every run counted once").to.equal(41);
    // The 40 requests arrived while the first run held the source: far fewer sandbox entries than runs.
    expect(after.multi - before.multi, "batches of more than one run").to.be.at.least(1);
    expect(after.batches - before.batches, `sandbox entries for 41 runs`).to.be.at.most(10);
    const logs = (await client.get(`/v1/sources/${source.id}/logs?limit=100`)).body.data as any[];
    expect(logs.length, "one log per run").to.equal(41);
  });

  it("dedupe sees the earlier runs of the same batch (unique and greatest)", async () => {
    const before = await batchMetrics(server);
    const unique = await deploy(client, UNIQUE);
    const keys = ["a", "b", "a", "c", "b", "d", "a"];
    await burst(
      endpointOf(unique),
      1000,
      keys.map((key, i) => ({ n: i + 1, key })),
    );
    const uniqueEvents = await eventually("unique events", async () => {
      const list = await events(client, unique.id);
      return list.some((e) => e.event.key === "d") ? list : undefined;
    });
    await sleep(300);
    // The holding run sent no key (an emit without id is kept): only the keyed ones count here.
    expect((await events(client, unique.id)).map((e) => e.event.key).filter((k) => k !== undefined)).to.deep.equal(["a", "b", "c", "d"]);
    expect(uniqueEvents.length).to.be.at.least(4);

    const greatest = await deploy(client, GREATEST);
    const values = [5, 3, 6, 6, 2, 9, 7, 10];
    await burst(
      endpointOf(greatest),
      1000,
      values.map((v) => ({ v })),
    );
    await eventually("greatest reaches 10", async () =>
      (await events(client, greatest.id)).some((e) => e.event.v === 10) ? true : undefined,
    );
    await sleep(300);
    const kept = (await events(client, greatest.id)).map((e) => e.event.v).filter((v) => v !== undefined);
    expect(kept).to.deep.equal([5, 6, 9, 10]);
    expect((await batchMetrics(server)).multi - before.multi, "they ran as batches").to.be.at.least(2);
  });

  it("a failing and a timed-out run inside a batch become their own $errors events; the others are kept", async () => {
    const source = await deploy(client, COUNTER);
    const bodies = [{ n: 1 }, { n: 2, fail: true }, { n: 3 }, { n: 4, hang: true }, { n: 5 }, { n: 6 }];
    const before = await batchMetrics(server);
    await burst(endpointOf(source), 1000, bodies);
    const got = await eventually("the runs after the failures", async () => {
      const list = await events(client, source.id, "");
      return list.some((e) => e.event.n === 6) ? list : undefined;
    });
    expect(got.map((e) => e.event.n)).to.deep.equal([0, 1, 3, 5, 6]);
    // The failing run's db write is kept (as for any failed run); the timed-out one's too.
    expect(got.map((e) => e.event.count)).to.deep.equal([1, 2, 4, 6, 7]);
    const errors: EventSummary[] = await eventually("two $errors events", async () => {
      const list = await events(client, source.id, "$errors");
      return list.length >= 2 ? list : undefined;
    });
    expect(errors.map((e) => e.event.original_event.body.n)).to.deep.equal([2, 4]);
    expect(errors.map((e) => e.event.error.code)).to.deep.equal(["USER_ERROR", "TIMEOUT"]);
    const after = await batchMetrics(server);
    expect(after.multi - before.multi, "they ran as a batch").to.be.at.least(1);
  });

  it("custom responses: each request of a batch gets its own answer, after its event is stored", async () => {
    const source = await deploy(client, RESPONDER);
    const url = endpointOf(source);
    const holding = post(url, { n: 0, holdMs: 1000 });
    await sleep(200);
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const r = await post(url, { n: i + 1 });
        return { status: r.status, header: r.headers.get("x-n"), body: await r.json() };
      }),
    );
    expect((await holding).status).to.equal(200);
    answers.forEach((a, i) => expect(a).to.deep.equal({ status: 200, header: String(i + 1), body: { n: i + 1 } }));
    // Answered once durable: every answered run's event is readable now.
    const got = (await events(client, source.id)).map((e) => e.event.n).sort((a, b) => a - b);
    expect(got).to.deep.equal(Array.from({ length: 21 }, (_, i) => i));
  });

  it("every run of a batch counts in the owner's usage", async () => {
    // The operator is on the paid plan: its usage is the billing period's invocations.
    const invocations = async () => (await me(client)).billing_period_invocations as number;
    const source = await deploy(client, COUNTER);
    const used = await invocations();
    await burst(
      endpointOf(source),
      800,
      Array.from({ length: 15 }, (_, i) => ({ n: i + 1 })),
    );
    await eventually("16 more invocations used", async () => ((await invocations()) >= used + 16 ? true : undefined));
    await sleep(300);
    expect(await invocations()).to.equal(used + 16);
  });
});

describe("sources: batches under back-pressure and across a SIGKILL (real server)", function () {
  this.timeout(120_000);

  it("past a source's backlog the endpoint answers 429 with Retry-After; every admitted request runs once", async () => {
    const server = new TestServer({
      env: { HEADWATER_SOURCE_BACKLOG: "10", ...OPEN_ENDPOINTS },
    });
    await server.start();
    try {
      const client = server.client();
      const source = await deploy(client, COUNTER);
      const url = endpointOf(source);
      const first = await post(url, { n: 0, holdMs: 1500 });
      expect(first.status).to.equal(200);
      const answers = [];
      for (let n = 1; n <= 30; n++) {
        const r = await post(url, { n });
        answers.push({
          n,
          status: r.status,
          retryAfter: r.headers.get("retry-after"),
          code: r.status === 429 ? ((await r.json()) as { code: string }).code : null,
        });
      }
      const admitted = answers.filter((a) => a.status === 200).map((a) => a.n);
      const refused = answers.filter((a) => a.status === 429);
      expect(admitted.length + refused.length).to.equal(30);
      expect(admitted.length, "at most the backlog bound waits behind the running invocation").to.be.at.most(10);
      expect(refused.length).to.be.at.least(20);
      for (const r of refused) {
        expect(r.code).to.equal("backlog_full");
        expect(Number(r.retryAfter)).to.be.at.least(1);
      }
      const got = await eventually("every admitted run", async () => {
        const list = await events(client, source.id);
        return list.length >= admitted.length + 1 ? list : undefined;
      });
      await sleep(500);
      expect((await events(client, source.id)).map((e) => e.event.n)).to.deep.equal([0, ...admitted]);
      expect(got.length).to.equal(admitted.length + 1);
      // Once drained, the source admits again.
      expect((await post(url, { n: 99 })).status).to.equal(200);
    } finally {
      await server.stop();
    }
  });

  it("a SIGKILL in the middle of a batch: after the restart, exactly one event per acknowledged request", () =>
    withServer(async (server) => {
      let client = server.client();
      const source = await deploy(client, COUNTER);
      const url = endpointOf(source);
      // Each run of the batch takes 100 ms, so the kill lands while the batch is in the sandbox.
      const bodies = Array.from({ length: 30 }, (_, i) => ({ n: i + 1, holdMs: 100 }));
      const statuses = await burst(url, 1000, bodies);
      const acknowledged = [0, ...bodies.filter((_, i) => statuses[i + 1] === 200).map((b) => b.n)];
      expect(acknowledged.length).to.equal(31);
      await sleep(1000 + 1000); // the holding run is done; the batch of 30 (3 s) is half way
      await server.kill();
      await server.start();
      client = server.client();
      const got = await eventually(
        "every acknowledged request's event",
        async () => {
          const list = await events(client, source.id);
          return list.length >= acknowledged.length ? list : undefined;
        },
        30_000,
      );
      await sleep(1000);
      const after = await events(client, source.id);
      expect(after.length, "no event twice").to.equal(got.length);
      expect(after.map((e) => e.event.n)).to.deep.equal(acknowledged);
      expect(
        after.map((e) => e.event.count),
        "this.db went on from the last recorded run",
      ).to.deep.equal(acknowledged.map((_, i) => i + 1));
    }));
});

describe("sources: custom responses on the node that runs them (real server)", function () {
  this.timeout(120_000);

  /**
   * Invocations ever written to the bus on `sourceId`'s partition: the partition's end in the bus
   * file (retention deletes what was read), or its high watermark on Kafka in the scaled mode.
   */
  const queuedOnBus = async (server: TestServer, sourceId: string): Promise<number> => {
    const partition = partitionForKey(sourceId, INVOCATION_PARTITIONS);
    if (server.cluster) {
      const { brokers } = await sharedKafka();
      const admin = new kafkajs.Kafka({ clientId: "batching-test", brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const ends = await admin.fetchTopicOffsets(`${server.cluster.busNamespace}.${INVOCATIONS_TOPIC}`);
        return Number(ends.find((end) => end.partition === partition)!.high);
      } finally {
        await admin.disconnect();
      }
    }
    const db = new Database(path.join(server.dataDir, "bus.db"), { readonly: true });
    try {
      const row = db
        .prepare("SELECT next_offset AS n FROM bus_partitions WHERE topic = ? AND partition = ?")
        .get(INVOCATIONS_TOPIC, partition) as { n: number } | undefined;
      return row?.n ?? 0;
    } finally {
      db.close();
    }
  };

  it("are run without being written to the bus; queued requests of another source on the same partition are", () =>
    withServer(async (server) => {
      const client = server.client();
      const responder = await deploy(client, RESPONDER);
      const before = await queuedOnBus(server, responder.id);
      const answers = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const r = await post(endpointOf(responder), { n: i });
          return { status: r.status, body: await r.json() };
        }),
      );
      answers.forEach((a, i) => expect(a).to.deep.equal({ status: 200, body: { n: i } }));
      expect((await events(client, responder.id)).map((e) => e.event.n).sort((a, b) => a - b)).to.deep.equal(
        Array.from({ length: 10 }, (_, i) => i),
      );
      expect(await queuedOnBus(server, responder.id), "no custom-response request went to the bus").to.equal(before);
      // The control: a queued source's requests are written to the bus (deployed until one shares the partition).
      let counter = await deploy(client, COUNTER);
      while (partitionForKey(counter.id, INVOCATION_PARTITIONS) !== partitionForKey(responder.id, INVOCATION_PARTITIONS)) {
        counter = await deploy(client, COUNTER);
      }
      for (let n = 0; n < 3; n++) expect((await post(endpointOf(counter), { n })).status).to.equal(200);
      expect(await queuedOnBus(server, responder.id)).to.equal(before + 3);
    }));

  it("a SIGKILL in the middle of a batch: every answered request's event exactly once, nothing run after the restart", () =>
    withServer(async (server) => {
      let client = server.client();
      const source = await deploy(client, RESPONDER);
      const url = endpointOf(source);
      // A held first run, then 30 requests at once (each run 100 ms) that wait for it and run as batches.
      const holding = post(url, { n: 0, holdMs: 1000 });
      await sleep(200);
      const requests = Array.from({ length: 30 }, (_, i) =>
        post(url, { n: i + 1, holdMs: 100 }).then(
          async (r) => ({ n: i + 1, answered: r.status === 200 && ((await r.json()) as { n: number }).n === i + 1 }),
          () => ({ n: i + 1, answered: false }),
        ),
      );
      await sleep(800 + 1500); // the holding run is done; the batch of 30 (3 s) is half way
      await server.kill();
      const outcomes = [
        await holding.then(
          (r) => ({ n: 0, answered: r.status === 200 }),
          () => ({ n: 0, answered: false }),
        ),
        ...(await Promise.all(requests)),
      ];
      const answered = outcomes.filter((o) => o.answered).map((o) => o.n);
      expect(answered, "the held run was answered before the kill").to.include(0);
      expect(answered.length, "the kill came before every request was answered").to.be.lessThan(31);
      await server.start();
      client = server.client();
      const recorded = await events(client, source.id);
      await sleep(1500);
      const after = (await events(client, source.id)).map((e) => e.event.n as number);
      expect(after, "nothing ran after the restart: the unanswered requests were never queued").to.deep.equal(
        recorded.map((e) => e.event.n),
      );
      expect(new Set(after).size, "no event twice").to.equal(after.length);
      for (const n of answered) expect(after, `answered request ${n}`).to.include(n);
      expect(
        [...after].sort((a, b) => a - b),
        "in order",
      ).to.deep.equal(after);
    }));
});

// The failure is injected by holding the embedded log's write lock (SQLite gives up after its busy
// timeout). The scaled log (PostgreSQL) waits for a lock as long as it is held, so there is no
// failure to inject that way: defined in the embedded run only (the runner's skip under test is
// the same code in both modes).
if (testMode() === "embedded") {
  describe("sources: a custom-response call retried after a failed record (real server)", function () {
    this.timeout(120_000);

    it("what the call already answered is not run again by the bus's retry: each request's event once", () =>
      withServer(async (server) => {
        const client = server.client();
        const source = await deploy(client, RESPONDER);
        const url = endpointOf(source);
        // The first run holds the source; the second arrives meanwhile and the same call takes it next.
        const first = post(url, { n: 1, holdMs: 800 });
        await sleep(200);
        const second = post(url, { n: 2, holdMs: 800 });
        const answerOne = await first;
        expect(answerOne.status).to.equal(200);
        expect(await answerOne.json()).to.deep.equal({ n: 1 });
        // The first is recorded and answered; the second is in the sandbox. Its record will find the
        // log locked, give up after SQLite's busy timeout, and the bus will retry the whole call.
        const lock = new Database(path.join(server.dataDir, "events.db"));
        lock.exec("BEGIN IMMEDIATE");
        try {
          await eventually(
            "the second run's record to fail",
            async () => (server.output.includes("a batch could not be recorded") ? true : undefined),
            30_000,
          );
        } finally {
          lock.exec("COMMIT");
          lock.close();
        }
        const answerTwo = await second;
        expect(answerTwo.status).to.equal(200);
        expect(await answerTwo.json()).to.deep.equal({ n: 2 });
        await sleep(1000); // a run of the first again (the defect) would be recorded by now
        const emitted = (await events(client, source.id)).map((e) => e.event.n as number);
        expect(emitted).to.deep.equal([1, 2]);
      }));
  });
}
