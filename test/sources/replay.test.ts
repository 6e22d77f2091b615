import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { openEventStore } from "../../src/store/open.js";

const emitter = `export default {
  name: "Replay emitter", version: "1.0.0", dedupe: "unique",
  props: { http: "$.interface.http", db: "$.service.db", secret: { type: "string", secret: true } },
  async run(event) {
    console.log("run", event.n);
    this.db.set("runs", (this.db.get("runs") ?? 0) + 1);
    for (let i = 0; i < (event.count ?? 1); i++) this.$emit({ n: event.n, i }, { id: \`\${event.n}-\${i}\`, summary: "s" + i, name: i % 5 === 0 ? "fifths" : undefined });
  },
};`;

async function pages(client: ApiClient, path: string): Promise<unknown[]> {
  const out: unknown[] = [];
  let after = "";
  for (let i = 0; i < 50; i++) {
    const r = await client.get(`${path}${path.includes("?") ? "&" : "?"}limit=7${after}`);
    out.push(r.body);
    if (r.body.data.length === 0) break;
    after = `&after=${r.body.page_info.end_cursor}`;
  }
  return out;
}

describe("sources: retention and replay (real server)", function () {
  this.timeout(120_000);

  it("keeps the log bounded to the kept window, and a rebuild answers exactly as before", async () => {
    // A fixed public URL: endpoint URLs are built on it, and the port changes across restarts.
    const server = new TestServer({ env: { HEADWATER_PUBLIC_URL: "http://headwater.test" } });
    await server.start();
    const admin = server.client();
    const a = (await admin.post("/v1/sources", { component_code: emitter, name: "A", configured_props: { secret: "x1" } })).body.data;
    const b = (await admin.post("/v1/sources", { component_code: emitter, name: "B", configured_props: { secret: "x2" } })).body.data;
    for (let n = 0; n < 26; n++) await admin.post(`/v1/sources/${a.id}/run`, { event: { n, count: 10 } });
    await admin.post(`/v1/sources/${a.id}/run`, { event: { n: 3, count: 10 } }); // all duplicates
    for (let n = 0; n < 3; n++) await admin.post(`/v1/sources/${b.id}/run`, { event: { n, count: 4 } });
    const ids = (await admin.get(`/v1/sources/${b.id}/event_summaries?limit=100`)).body.data.map((e: { id: string }) => e.id);
    await admin.delete(`/v1/sources/${b.id}/events?start_id=${ids[5]}&end_id=${ids[2]}`);
    await admin.put(`/v1/sources/${b.id}`, { active: false, name: "B paused" });
    await new Promise((r) => setTimeout(r, 1500)); // retention sweeps once a second

    const snapshot = async (admin = server.client()) => ({
      sources: await pages(admin, "/v1/users/me/sources"),
      a: await pages(admin, `/v1/sources/${a.id}/event_summaries`),
      aExpanded: (await admin.get(`/v1/sources/${a.id}/event_summaries?limit=100&expand=event`)).body,
      aFifths: (await admin.get(`/v1/sources/${a.id}/event_summaries?limit=100&event_name=fifths`)).body,
      b: (await admin.get(`/v1/sources/${b.id}/event_summaries?limit=100&expand=event`)).body,
      logs: (await admin.get(`/v1/sources/${a.id}/logs?limit=100`)).body,
      me: (await admin.get("/v1/users/me")).body,
      components: (await admin.get(`/v1/components/${a.component_id}`)).body,
    });
    const before = await snapshot();
    expect((before.aExpanded as { data: unknown[] }).data).to.have.length(100);
    expect((before.logs as { data: unknown[] }).data).to.have.length(27);
    await server.stop();

    const store = await openEventStore(server.eventStoreUrl);
    const kept = await store.readStream(`emitter-${a.id}`);
    await store.close();
    const emitted = kept.filter((e) => e.type === "EventEmitted");
    expect(emitted.length, "older events were truncated from the log").to.equal(100);
    expect(kept[0].revision).to.be.greaterThan(150);

    const rebuilt = server.cli("projections", "rebuild");
    expect(rebuilt.status, rebuilt.stderr).to.equal(0);
    await server.start();
    const after = await snapshot();
    for (const key of Object.keys(before) as (keyof typeof before)[]) expect(after[key], key).to.deep.equal(before[key]);

    // The state (dedupe cache, db) survived too: duplicates stay out, the db count continues.
    const again = await server.client().post(`/v1/sources/${a.id}/run`, { event: { n: 25, count: 10 } });
    expect(again.body.data.emitted).to.have.length(0);
    await server.stop();
  });
});
