import { expect } from "chai";
import Database from "better-sqlite3";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { TestServer, testMode, type ApiClient } from "../harness/server.js";
import { eventually } from "../harness/receiver.js";

// A node whose storage fails for a while (here: its read-model file held locked by another
// process past SQLite's busy timeout; a full disk would do the same) is not ready meanwhile and
// serves again by itself once the failure is gone, without a restart.

const ECHO = `export default {
  name: "recovery echo",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    this.$emit(event.body, { summary: "echo" });
  },
};`;

/** A deployed ECHO source, and a POST of `{n}` to its endpoint. */
async function echoSource(client: ApiClient, name: string): Promise<{ source: any; post: (n: number) => Promise<Response> }> {
  const source = (await client.post("/v1/sources", { component_code: ECHO, name })).body.data;
  const post = (n: number) =>
    fetch(source.configured_props.http.endpoint_url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ n }),
    });
  return { source, post };
}

describe("a node recovers from its read models failing for a while (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer();

  before(() => server.start());
  after(() => server.stop());

  it("while the file is locked past the busy timeout the node is not ready; after, it projects again and serves", async () => {
    const client = server.client();
    const { source, post } = await echoSource(client, "recovery");
    expect((await post(1)).status).to.equal(200);

    const lock = new Database(path.join(server.dataDir, "readmodels.db"));
    lock.exec("BEGIN IMMEDIATE");
    try {
      // A request queued now is run and recorded; the read models cannot take it in.
      expect((await post(2)).status).to.equal(200);
      await eventually(async () => (server.output.includes("projector: reading or applying the log failed") ? true : undefined), 30_000);
      const ready = await server.anonymous().get("/readyz");
      expect(ready.status).to.equal(503);
      expect(ready.body.checks.projections.ok).to.equal(false);
    } finally {
      lock.exec("COMMIT");
      lock.close();
    }

    // No restart: the projector tries again, and everything the log got meanwhile is there.
    await eventually(async () => ((await server.anonymous().get("/readyz")).status === 200 ? true : undefined), 60_000);
    expect((await post(3)).status).to.equal(200);
    const listed = await eventually(async () => {
      const r = await client.get(`/v1/sources/${source.id}/event_summaries?expand=event`);
      return r.body.data.length === 3 ? r.body.data : undefined;
    }, 15_000);
    expect(listed.map((e: { event: { n: number } }) => e.event.n)).to.deep.equal([3, 2, 1]);
    const created = await client.post("/v1/sources", { component_code: ECHO, name: "recovery-after" });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
  });

  it("a sandbox process killed from outside is replaced and says so in the node's log; runs go on", async () => {
    const client = server.client();
    const { source, post } = await echoSource(client, "recovery-sandbox");
    expect((await post(1)).status).to.equal(200);
    await eventually(async () =>
      (await client.get(`/v1/sources/${source.id}/event_summaries`)).body.data.length === 1 ? true : undefined,
    );
    // The sandbox processes are the node's children that run the runner worker.
    const children = execFileSync("pgrep", ["-P", String(server.pid), "-f", "worker"], { encoding: "utf8" })
      .trim()
      .split("\n");
    expect(children.length).to.be.greaterThan(0);
    for (const pid of children) process.kill(Number(pid), "SIGKILL");
    await eventually(async () => (server.output.includes("sandbox process replaced") ? true : undefined), 15_000);
    const line = server.output.split("\n").find((l) => l.includes("sandbox process replaced"))!;
    expect(JSON.parse(line)).to.include({ level: 40, reason: "RUNNER_CRASHED", signal: "SIGKILL" });
    expect((await post(2)).status).to.equal(200);
    const listed = await eventually(async () => {
      const r = await client.get(`/v1/sources/${source.id}/event_summaries?expand=event`);
      return r.body.data.length === 2 ? r.body.data : undefined;
    }, 15_000);
    expect(listed.map((e: { event: { n: number } }) => e.event.n)).to.deep.equal([2, 1]);
  });

  // The embedded bus is a SQLite file too (the scaled one is Kafka).
  if (testMode() === "embedded") {
    it("a request that cannot be queued because the bus's file is locked gets 503 with Retry-After, and is taken once it is free", async () => {
      const client = server.client();
      const { source, post } = await echoSource(client, "recovery-bus");
      const lock = new Database(path.join(server.dataDir, "bus.db"));
      lock.exec("BEGIN IMMEDIATE");
      let refused: Response;
      try {
        refused = await post(1);
      } finally {
        lock.exec("COMMIT");
        lock.close();
      }
      expect(refused.status).to.equal(503);
      expect(refused.headers.get("retry-after")).to.equal("1");
      expect(await refused.json()).to.include({ code: "unavailable" });
      expect((await post(2)).status).to.equal(200);
      const listed = await eventually(async () => {
        const r = await client.get(`/v1/sources/${source.id}/event_summaries?expand=event`);
        return r.body.data.length > 0 ? r.body.data : undefined;
      }, 15_000);
      expect(listed.map((e: { event: { n: number } }) => e.event.n)).to.deep.equal([2]);
    });
  }
});
