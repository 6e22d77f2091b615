import { expect } from "chai";
import path from "node:path";
import { TestServer, type ApiClient } from "../harness/server.js";
import { openBus } from "../../src/bus/open.js";
import { INVOCATIONS_TOPIC, INVOCATION_PARTITIONS, type InvocationMessage } from "../../src/runner/invocations.js";
import { partitionForKey } from "../../src/bus/partition.js";
import { RECENT_INVOCATIONS } from "../../commands/emitters/emitter.js";
import { EMIT_TIMER_EVENT, deploy, eventually, events, sleep, type EventSummary } from "./sourcesSupport.js";

// What sources promise across a SIGKILL and a restart: acknowledged events are kept, a custom-response
// invocation in flight runs once after the restart, timers go on, and a redelivered invocation emits nothing twice.

/** Emits each request's body (answered 200 once the invocation is queued). */
const ECHO_BODY = `export default {
  name: "Body echo",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit(event.body, { summary: "body" }); },
};`;

/** Takes 2 s before it emits and responds, so a SIGKILL can land while it runs. */
const SLOW_RESPONDER = `export default {
  name: "Slow responder",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    this.$emit(event.body, { summary: "slow" });
    this.http.respond({ status: 201, body: "done" });
  },
};`;

const countBy = (list: EventSummary[], key: (e: EventSummary) => unknown) => {
  const counts = new Map<string, number>();
  for (const e of list) counts.set(JSON.stringify(key(e)), (counts.get(JSON.stringify(key(e))) ?? 0) + 1);
  return counts;
};

describe("restart (real server)", function () {
  this.timeout(90_000);
  const server = new TestServer({ env: { HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1" } });
  let client: ApiClient;
  let echo: any;
  let slow: any;
  let timer: any;
  const acknowledged: { n: number; invocationId: string }[] = [];

  const endpointOf = (source: any) => new URL(source.configured_props.http.endpoint_url).pathname;

  before(async () => {
    await server.start();
    client = server.client();
    [echo, slow, timer] = await Promise.all([
      deploy(client, ECHO_BODY, {}, "echo"),
      deploy(client, SLOW_RESPONDER, {}, "slow"),
      deploy(client, EMIT_TIMER_EVENT, { timer: { intervalSeconds: 1 } }, "ticker"),
    ]);
  });
  after(() => server.stop());

  it("after a SIGKILL: every acknowledged event is kept, an unanswered custom-response run is not run again, timers go on", async () => {
    await eventually("the timer fires", async () => ((await events(client, timer.id)).length >= 2 ? true : undefined));

    // A custom-response request whose run is in the sandbox when the server dies.
    const slowSentAt = Date.now();
    const slowAnswer = client.post(endpointOf(slow), { n: "slow" }).then(
      (r) => r.status,
      (e: Error) => e,
    );
    let stopping = false;
    let n = 0;
    // Paced and capped so that requests are in flight at the kill and every event fits in the kept 100.
    const writer = async () => {
      while (!stopping && n < 80) {
        const body = { n: n++ };
        try {
          const r = await client.post(endpointOf(echo), body);
          if (r.status === 200) acknowledged.push({ n: body.n, invocationId: r.body.invocation_id });
        } catch {
          return; // the connection died with the server
        }
        await sleep(100);
      }
    };
    const writers = Array.from({ length: 6 }, writer);
    await eventually(
      "30 acknowledged requests, 1 s into the slow run",
      async () => (acknowledged.length >= 30 && Date.now() - slowSentAt >= 1000 ? true : undefined),
      15_000,
      5,
    );
    const acknowledgedAtKill = acknowledged.length;
    const killedAt = Date.now();
    await server.kill();
    stopping = true;
    await Promise.all(writers);
    expect(await slowAnswer, "the slow request must die with the server").to.be.instanceOf(Error);
    expect(acknowledged.length).to.be.at.least(acknowledgedAtKill);

    await sleep(3000);
    await server.start();
    const restartedAt = Date.now();
    client = server.client();

    const echoed = await eventually("every acknowledged request's event", async () => {
      const got = await events(client, echo.id);
      const seen = new Set(got.map((e) => e.event.n));
      return acknowledged.every((a) => seen.has(a.n)) ? got : undefined;
    });
    const duplicated = [...countBy(echoed, (e) => e.event.n)].filter(([, count]) => count > 1);
    expect(duplicated, "events emitted twice").to.deep.equal([]);

    const ticks = await eventually("3 timer ticks after the restart", async () => {
      const got = await events(client, timer.id);
      return got.filter((e) => e.event.timestamp * 1000 > restartedAt).length >= 3 ? got : undefined;
    });
    await sleep(2500); // room for a run of the slow invocation, if it had been queued
    // Its answer was its only acknowledgment, and it went to the node's runner without the bus:
    // it died unanswered and unrecorded with the server, so its sender's retry is its only run.
    expect(await events(client, slow.id), "the interrupted invocation did not run after the restart").to.deep.equal([]);
    expect((await client.get(`/v1/sources/${slow.id}/logs`)).body.data, "no recorded run").to.deep.equal([]);

    const ts = ticks.map((e) => e.event.timestamp as number);
    const gaps = ts.slice(1).map((t, i) => t - ts[i]);
    expect(gaps.filter((g) => g !== 1).length, `one gap, for the downtime, in ${JSON.stringify(ts)}`).to.equal(1);
    expect(Math.min(...gaps), "no tick fired twice").to.be.greaterThan(0);
    // The tick after the gap is the catch-up: missed while down, fired at start.
    const catchUp = ts[gaps.findIndex((g) => g !== 1) + 1];
    expect(catchUp * 1000).to.be.greaterThan(killedAt);
    expect(catchUp * 1000, `catch-up tick ${catchUp}, restarted at ${restartedAt}`).to.be.at.most(restartedAt + 100);
  });

  it("a timer tick queued again (as every scheduler node queues it) emits nothing again, also after a restart", async () => {
    // A tick's invocation id is derived from the source and the tick, so its copies arrive in
    // records of their own: the source's window of recent ids tells them. (An HTTP request's id is
    // minted for its one record: its redeliveries, the same record again, are told by the record's
    // place on the bus, shown by the SIGKILL tests here and in batching.test.ts.)
    const fired = (await events(client, timer.id)).at(-1)!;
    await server.stop();

    // With the server stopped, this process publishes the copy on the server's own bus
    // (its embedded file, or its Kafka namespace).
    const bus = await openBus(server.busUrl, { file: path.join(server.dataDir, "bus.db"), clientId: "redelivery-test" });
    const message = (m: Omit<InvocationMessage, "minPosition" | "enqueuedMs">) => ({
      key: m.sourceId,
      value: JSON.stringify({ ...m, minPosition: 0, enqueuedMs: Date.now() }),
    });
    try {
      await bus.publish(INVOCATIONS_TOPIC, [
        // The same invocation id as a tick already recorded, with an event that would show if it ran.
        message({
          invocationId: `inv_${timer.id}_${fired.event.timestamp * 1000}`,
          sourceId: timer.id,
          trigger: "timer",
          event: { timestamp: 1, interval_seconds: 1, redelivered: true },
        }),
        // A fresh invocation behind it on the same key: once it is visible, the copy was handled.
        message({ invocationId: "inv_fresh_timer_after_redelivery", sourceId: timer.id, trigger: "manual", event: { fresh: true } }),
      ]);
    } finally {
      await bus.close();
    }

    await server.start();
    client = server.client();
    const ticked = await eventually("the fresh timer invocation", async () => {
      const got = await events(client, timer.id);
      return got.some((e) => e.event.fresh === true) ? got : undefined;
    });
    expect(
      ticked.filter((e) => e.event.redelivered === true),
      "the copy of the timer tick ran again",
    ).to.deep.equal([]);
  });
});

/**
 * Emits each request's body with how many runs this source has had (counted in `this.db`), except
 * that a body with `hang` keeps its run busy for 30 s first.
 */
const ECHO_OR_HANG = `export default {
  name: "Echo or hang",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" }, db: "$.service.db" },
  async run(event) {
    if (event.body && event.body.hang) await new Promise((resolve) => setTimeout(resolve, 30000));
    const runs = (this.db.get("runs") ?? 0) + 1;
    this.db.set("runs", runs);
    this.$emit({ ...event.body, runs }, { summary: "body" });
  },
};`;

describe("restart behind a slow run (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer();
  // The redelivered hanging run would hold a graceful stop for its 30 s.
  after(() => server.kill());

  it("a busy source sharing its partition with a hanging run runs each invocation once after a SIGKILL, however far the commit lagged", async () => {
    await server.start();
    let client = server.client();
    // Seventeen sources on sixteen partitions: two of them share one.
    const deployed = await Promise.all(
      Array.from({ length: INVOCATION_PARTITIONS + 1 }, (_, i) => deploy(client, ECHO_OR_HANG, {}, `s${i}`)),
    );
    const byPartition = new Map<number, any[]>();
    for (const source of deployed) {
      const partition = partitionForKey(source.id, INVOCATION_PARTITIONS);
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), source]);
    }
    const [slow, busy] = [...byPartition.values()].find((group) => group.length > 1)!;
    const endpointOf = (source: any) => new URL(source.configured_props.http.endpoint_url).pathname;

    // The slow run holds its partition's committed offset while the busy source's runs finish behind it,
    // more of them than the ids a source remembers.
    expect((await client.post(endpointOf(slow), { hang: true })).status).to.equal(200);
    const count = Math.ceil((RECENT_INVOCATIONS + 20) / 10) * 10;
    for (let n = 0; n < count; n += 10) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => client.post(endpointOf(busy), { n: n + i })));
      expect(answers.map((r) => r.status)).to.deep.equal(Array(10).fill(200));
    }
    const newest = async () => (await events(client, busy.id)).at(-1)?.event;
    const before = await eventually(
      "every busy run recorded",
      async () => ((await newest())?.runs === count ? await newest() : undefined),
      30_000,
    );
    expect(before.n, "runs of one source happen in order").to.equal(count - 1);
    await server.kill();

    await server.start();
    client = server.client();
    // Behind everything the bus redelivers for that source: once this one's event is in, the rest were handled.
    expect((await client.post(endpointOf(busy), { n: "after" })).status).to.equal(200);
    const after = await eventually(
      "the event sent after the restart",
      async () => {
        const event = await newest();
        return event?.n === "after" ? event : undefined;
      },
      30_000,
    );
    expect(after.runs, "runs counted by the source: none of the redelivered invocations ran again").to.equal(count + 1);
    const got = await events(client, busy.id);
    const duplicated = [...countBy(got, (e) => e.event.n)].filter(([, times]) => times > 1);
    expect(duplicated, "events emitted twice").to.deep.equal([]);
  });
});
