import { expect } from "chai";
import { TestServer, newCluster } from "../harness/server.js";
import { startKafka, type KafkaBroker } from "../harness/kafka.js";
import { eventually } from "../harness/receiver.js";

// The scaled configuration with its Kafka broker killed (SIGKILL, as a crash or an OOM kill would)
// under a steady load of requests, then started again on the same data: the node keeps answering
// (refusing what it cannot queue, never with a 500), every request it acknowledged runs exactly
// once, and it takes traffic again once the broker is back, without a restart of its own.

const collector = `export default {
  name: "Numbered", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ n: event.body.n }, { summary: String(event.body.n) }); },
};`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Events are kept 100 per source: the load stays under that, so every run can be counted. */
const MAX_REQUESTS = 90;

describe("scale: the Kafka broker killed and restarted under load", function () {
  this.timeout(300_000);
  let broker: KafkaBroker;
  let server: TestServer;

  before(async function () {
    broker = await startKafka();
    const cluster = newCluster();
    server = new TestServer({
      mode: "scaled",
      cluster,
      env: { HEADWATER_BUS: `kafka://${broker.brokers.join(",")}?namespace=${cluster.busNamespace}` },
    });
    await server.start(90_000);
  });

  after(async () => {
    await server?.stop();
    await broker?.stop();
  });

  it("refuses what it cannot queue while the broker is down, runs every acknowledged request exactly once, and recovers by itself", async () => {
    const admin = server.client();
    const deployed = await admin.post("/v1/sources", { component_code: collector, name: "numbered" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const endpoint = `${server.url}${new URL(source.configured_props.http.endpoint_url).pathname}`;

    const outcomes = new Map<number, number | string>();
    const retryAfter: (string | null)[] = [];
    const send = async (n: number): Promise<void> => {
      try {
        const r = await fetch(endpoint, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ n }),
          signal: AbortSignal.timeout(60_000),
        });
        await r.arrayBuffer();
        outcomes.set(n, r.status);
        if (r.status === 503) retryAfter.push(r.headers.get("retry-after"));
      } catch (error) {
        outcomes.set(n, String(error));
      }
    };
    const acked = () => [...outcomes].filter(([, s]) => s === 200).map(([n]) => n);

    // A steady load, one new request every 50 ms with at most four waiting.
    let next = 1;
    let stopLoad = false;
    const inFlight = new Set<Promise<void>>();
    const load = (async () => {
      while (!stopLoad && next <= MAX_REQUESTS) {
        if (inFlight.size < 4) {
          const p = send(next++).finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        await sleep(50);
      }
      await Promise.all(inFlight);
    })();

    await eventually(async () => (acked().length >= 10 ? true : undefined), 30_000, "ten requests acknowledged before the crash");
    await broker.kill();
    const killedAt = next;
    await sleep(4_000);
    await broker.restart();
    // The node takes traffic again without being restarted itself.
    await eventually(
      async () => (acked().some((n) => n > killedAt + 4 && n >= next - 8) ? true : undefined),
      90_000,
      "a request acknowledged after the broker came back",
    );
    stopLoad = true;
    await load;

    const statuses = [...outcomes.values()];
    expect(
      statuses.filter((s) => s === 500),
      "no request answered 500",
    ).to.deep.equal([]);
    for (const s of statuses) expect([200, 503], `an answer while the broker was away: ${s}`).to.include(s);
    for (const r of retryAfter) expect(Number(r), "a 503 says when to try again").to.be.greaterThan(0);

    // Every acknowledged request ran exactly once; an unacknowledged one at most once.
    const ok = acked();
    const counts = await eventually(
      async () => {
        const r = await admin.get(`/v1/sources/${source.id}/event_summaries?limit=100&expand=event`);
        const seen = new Map<number, number>();
        for (const e of r.body.data as { event: { n: number } }[]) seen.set(e.event.n, (seen.get(e.event.n) ?? 0) + 1);
        return ok.every((n) => seen.has(n)) ? seen : undefined;
      },
      60_000,
      "every acknowledged request's event",
    );
    await sleep(2_000);
    const final = new Map<number, number>();
    const r = await admin.get(`/v1/sources/${source.id}/event_summaries?limit=100&expand=event`);
    for (const e of r.body.data as { event: { n: number } }[]) final.set(e.event.n, (final.get(e.event.n) ?? 0) + 1);
    expect(final.size).to.be.at.least(counts.size);
    expect(
      [...final].filter(([, c]) => c > 1),
      "no request ran twice",
    ).to.deep.equal([]);
    for (const n of ok) expect(final.get(n), `acknowledged request ${n}`).to.equal(1);
    expect(ok.length, "requests acknowledged in all").to.be.at.least(11);
  });
});
