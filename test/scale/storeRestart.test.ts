import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { TestServer } from "../harness/server.js";
import { startPrivatePostgres, type PrivatePostgres } from "../harness/postgres.js";
import { eventually } from "../harness/receiver.js";

// The scaled configuration with its PostgreSQL log crashed (`pg_ctl stop -m immediate`) and
// started again on the same data: writes answer 503 with Retry-After while it is away (never a
// 500, nothing half-written), reads keep answering from the node's read models, and the node
// takes writes again once it is back, without a restart of its own.

const numbered = `export default {
  name: "Numbered", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ n: event.body.n }, { summary: String(event.body.n) }); },
};`;

describe("scale: the PostgreSQL log crashed and started again", function () {
  this.timeout(300_000);
  let postgres: PrivatePostgres;
  let server: TestServer;

  before(async function () {
    postgres = await startPrivatePostgres();
    server = new TestServer({
      mode: "scaled",
      cluster: { eventStore: postgres.storeUrl, busNamespace: `t${randomBytes(6).toString("hex")}` },
    });
    await server.start(90_000);
  });

  after(async () => {
    await server?.stop();
    await postgres?.dispose();
  });

  it("answers writes 503 while the log is away, keeps serving reads, and takes writes again once it is back", async () => {
    const admin = server.client();
    const deployed = await admin.post("/v1/sources", { component_code: numbered, name: "before" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const endpoint = `${server.url}${new URL(source.configured_props.http.endpoint_url).pathname}`;
    const hit = (n: number) =>
      fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ n }) });
    expect((await hit(1)).status).to.equal(200);
    await eventually(async () => ((await admin.get(`/v1/sources/${source.id}/event_summaries`)).body.data.length === 1 ? true : undefined));

    await postgres.crash();
    const write = await admin.post("/v1/sources", { component_code: numbered, name: "during" });
    expect(write.status, JSON.stringify(write.body)).to.equal(503);
    expect(write.body.code).to.equal("unavailable");
    expect(Number(write.headers.get("retry-after"))).to.be.greaterThan(0);
    const update = await admin.put(`/v1/sources/${source.id}`, { name: "renamed", active: true });
    expect(update.status, JSON.stringify(update.body)).to.equal(503);
    // Reads come from the node's own read models.
    const read = await admin.get(`/v1/sources/${source.id}`);
    expect(read.status).to.equal(200);
    expect(read.body.data.name).to.equal("before");
    // A request to the source while the log is away: queued on the bus (200) or refused (503), never a 500.
    const during = await hit(2);
    expect([200, 503]).to.include(during.status);

    await postgres.start();
    const again = await eventually(
      async () => {
        const r = await admin.post("/v1/sources", { component_code: numbered, name: "after" });
        return r.status === 200 ? r : undefined;
      },
      60_000,
      "a write taken after the log came back",
    );
    expect(again.body.data.name).to.equal("after");
    expect(
      (await admin.get("/v1/users/me/sources?limit=100")).body.data.map((s: { name: string }) => s.name).sort(),
      "the refused deploy left nothing behind",
    ).to.deep.equal(["after", "before"]);
    expect((await hit(3)).status).to.equal(200);
    const expected = during.status === 200 ? [1, 2, 3] : [1, 3];
    const events = await eventually(
      async () => {
        const listed = (await admin.get(`/v1/sources/${source.id}/event_summaries?expand=event`)).body.data as { event: { n: number } }[];
        return listed.length >= expected.length ? listed : undefined;
      },
      60_000,
      "the events of every acknowledged request",
    );
    expect(events.map((e) => e.event.n).sort()).to.deep.equal(expected);
  });
});
