import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { TestServer, newCluster, newKey } from "../harness/server.js";
import { eventually } from "../harness/receiver.js";
import { openEventStore } from "../../src/store/open.js";

// An api-only node in front, a worker node (runner, scheduler, projector) behind it: the api node
// runs no user code except hooks, yet endpoints answer, timers tick and retention happens.

const echo = `export default {
  name: "Echo", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true }, token: { type: "string", secret: true } },
  async run(event) { this.http.respond({ status: 201, body: { got: event.body, token: this.token } }); },
};`;

const ticker = `export default {
  name: "Ticker", version: "1.0.0",
  props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } },
  async run(event) { this.$emit({ tick: event.timestamp }); },
};`;

describe("scale: nodes with different roles", function () {
  this.timeout(180_000);
  const cluster = newCluster();
  const key = newKey();
  const env = { HEADWATER_SECRET_KEY: randomBytes(32).toString("hex"), HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1" };
  const api = new TestServer({ mode: "scaled", cluster, bootstrapKey: key, env: { ...env, HEADWATER_ROLES: "api" } });
  const worker = new TestServer({
    mode: "scaled",
    cluster,
    bootstrapKey: key,
    env: { ...env, HEADWATER_ROLES: "runner,scheduler,projector" },
  });
  after(() => Promise.all([api.stop(), worker.stop()]));

  it("an api-only node hands runs, ticks and retention to a worker node", async () => {
    await Promise.all([api.start(90_000), worker.start(90_000)]);
    expect(worker.url, "no HTTP without the api role").to.equal("");
    const admin = api.client();

    const e = (await admin.post("/v1/sources", { component_code: echo, configured_props: { token: "t0k" } })).body.data;
    const r = await fetch(e.configured_props.http.endpoint_url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"x":1}',
    });
    expect(r.status).to.equal(201);
    expect(await r.json()).to.deep.equal({ got: { x: 1 }, token: "t0k" });

    const t = (await admin.post("/v1/sources", { component_code: ticker, configured_props: { timer: { intervalSeconds: 1 } } })).body.data;
    const ticks = await eventually(
      async () => {
        const data = (await admin.get(`/v1/sources/${t.id}/event_summaries?limit=100&expand=event`)).body.data as {
          event: { tick: number };
        }[];
        return data.length >= 3 ? data.map((x) => x.event.tick) : undefined;
      },
      20_000,
      "three ticks",
    );
    expect(new Set(ticks).size).to.equal(ticks.length);

    const m = (
      await admin.post("/v1/sources", {
        component_code: `export default { name: "Many", version: "1", props: { http: "$.interface.http" },
        async run(event) { for (let i = 0; i < 30; i++) this.$emit({ n: event.n, i }); } };`,
      })
    ).body.data;
    for (let n = 0; n < 5; n++) expect((await admin.post(`/v1/sources/${m.id}/run`, { event: { n } })).status).to.equal(200);
    const listed = (await admin.get(`/v1/sources/${m.id}/event_summaries?limit=100`)).body;
    expect(listed.page_info.total_count).to.equal(100);
    // The worker's projector role truncated the log to that window.
    const store = await openEventStore(cluster.eventStore);
    try {
      await eventually(
        async () => {
          const kept = (await store.readStream(`emitter-${m.id}`)).filter((x) => x.type === "EventEmitted");
          return kept.length === 100 ? true : undefined;
        },
        20_000,
        "the log truncated by the worker",
      );
    } finally {
      await store.close();
    }
  });
});
