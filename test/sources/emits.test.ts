import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";

// A source whose run emits what the manual-run event describes: {emits: [{event, meta}]}.
const emitter = (dedupe?: string) => `export default {
  name: "Emitter ${dedupe ?? "plain"}", version: "1.0.0",
  ${dedupe ? `dedupe: ${JSON.stringify(dedupe)},` : ""}
  props: { http: "$.interface.http" },
  async run(event) {
    console.log("emitting", (event.emits ?? []).length, "events");
    for (const e of event.emits ?? []) this.$emit(e.event, e.meta);
    if (event.fail) throw new Error(event.fail);
  },
};`;

describe("sources: emits, dedupe and the events API (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer();
  let admin: ApiClient;

  const deploy = async (dedupe?: string) => (await admin.post("/v1/sources", { component_code: emitter(dedupe) })).body.data.id as string;
  const run = async (id: string, emits: unknown[], extra: Record<string, unknown> = {}) => {
    const r = await admin.post(`/v1/sources/${id}/run`, { event: { emits, ...extra } });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data;
  };
  const listed = async (id: string, query = "") =>
    (await admin.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event${query}`)).body.data as any[];
  const e = (id: unknown, event: unknown = id, more: Record<string, unknown> = {}) => ({ event, meta: { id, ...more } });

  before(async () => {
    await server.start();
    admin = server.client();
  });
  after(() => server.stop());

  it("a manual run answers with its outcome, and its events are readable at once", async () => {
    const id = await deploy();
    const outcome = await run(id, [e(undefined, { hello: "world" }, { summary: "greeting" })]);
    expect(outcome.ok).to.equal(true);
    expect(outcome.emitted).to.have.length(1);
    expect(outcome.logs.map((l: { message: string }) => l.message)).to.include("emitting 1 events");
    const [summary] = await listed(id);
    expect(summary).to.deep.equal({
      id: outcome.emitted[0].id,
      indexed_at_ms: summary.indexed_at_ms,
      event: { hello: "world" },
      // Issue 10: emit_id is a string on every event; without an id given, the event's own id.
      metadata: { emit_id: outcome.emitted[0].id, name: "", emitter_id: id, summary: "greeting" },
    });
    expect(summary.id).to.match(/^\d{13}-\d+$/);
  });

  it("dedupe unique: only ids not among the last 100 are emitted", async () => {
    const id = await deploy("unique");
    await run(id, [e("a"), e("b"), e("a")]);
    await run(id, [e("b"), e("c")]);
    expect((await listed(id)).map((x) => x.event).reverse()).to.deep.equal(["a", "b", "c"]);
    await run(
      id,
      Array.from({ length: 100 }, (_, i) => e(`n${i}`)),
    );
    await run(id, [e("a"), e("n99")]);
    const events = (await listed(id)).map((x) => x.event);
    expect(events[0], "a left the 100-id cache and is emitted again").to.equal("a");
    expect(events.filter((x) => x === "n99")).to.have.length(1);
  });

  it("dedupe greatest: only ids larger than the largest so far; non-numeric ids are refused in the logs", async () => {
    const id = await deploy("greatest");
    await run(id, [e(5), e(3), e(8)]);
    const second = await run(id, [e(8), e(7), e(10), e("abc")]);
    expect((await listed(id)).map((x) => x.event).reverse()).to.deep.equal([5, 8, 10]);
    const logs = (await admin.get(`/v1/sources/${id}/logs?limit=1`)).body.data[0];
    expect(logs.id).to.equal(second.invocation_id);
    expect(logs.lines.map((l: { message: string }) => l.message).join("\n")).to.match(/numeric/);
  });

  it("dedupe last: only events after the cached id; no match emits all; with ts the newest is cached", async () => {
    const id = await deploy("last");
    await run(id, [e("a"), e("b"), e("c")]);
    await run(id, [e("b"), e("c"), e("d")]);
    await run(id, [e("x"), e("y")]);
    expect((await listed(id)).map((x) => x.event).reverse()).to.deep.equal(["a", "b", "c", "d", "x", "y"]);
    // Emitted out of order with ts: ordered by ts, and the newest (t3) becomes the cached id.
    await run(id, [e("t3", "t3", { ts: 3000 }), e("t1", "t1", { ts: 1000 }), e("t2", "t2", { ts: 2000 })]);
    await run(id, [e("t2", "t2", { ts: 2000 }), e("t3", "t3", { ts: 3000 }), e("t4", "t4", { ts: 4000 })]);
    expect(
      (await listed(id))
        .map((x) => x.event)
        .slice(0, 4)
        .reverse(),
    ).to.deep.equal(["t1", "t2", "t3", "t4"]);
  });

  it("an emit without id under a dedupe strategy is emitted and reported in the logs", async () => {
    const id = await deploy("unique");
    await run(id, [{ event: "no id", meta: {} }]);
    expect((await listed(id)).map((x) => x.event)).to.deep.equal(["no id"]);
    const lines = (await admin.get(`/v1/sources/${id}/logs?limit=1`)).body.data[0].lines.map((l: { message: string }) => l.message);
    expect(lines.join("\n")).to.match(/without an id/);
  });

  it("event ids are strictly increasing per emitter", async () => {
    const id = await deploy();
    for (let i = 0; i < 3; i++)
      await run(
        id,
        Array.from({ length: 5 }, (_, j) => e(undefined, `${i}.${j}`)),
      );
    const ids = (await listed(id)).map((x) => x.id).reverse();
    const parsed = ids.map((x: string) => x.split("-").map(Number) as [number, number]);
    for (let i = 1; i < parsed.length; i++) {
      const [a, b] = [parsed[i - 1], parsed[i]];
      expect(b[0] > a[0] || (b[0] === a[0] && b[1] > a[1]), `${ids[i - 1]} < ${ids[i]}`).to.equal(true);
    }
  });

  it("named channels: event_name reads one channel; the default channel is event_name=", async () => {
    const id = await deploy();
    await run(id, [e(undefined, "default"), e(undefined, "alert!", { name: "alerts" })]);
    expect((await listed(id, "&event_name=alerts")).map((x) => [x.event, x.metadata.name])).to.deep.equal([["alert!", "alerts"]]);
    expect((await listed(id, "&event_name=")).map((x) => x.event)).to.deep.equal(["default"]);
    expect(await listed(id)).to.have.length(2);
  });

  it("a thrown error is emitted on $errors with the triggering event; logs are on $logs", async () => {
    const id = await deploy();
    const outcome = await run(id, [], { fail: "exploded" });
    expect(outcome.ok).to.equal(false);
    expect(outcome.error.message).to.equal("exploded");
    const [error] = await listed(id, "&event_name=$errors");
    expect(error.metadata.name).to.equal("$errors");
    expect(error.event.error).to.include({ name: "Error", message: "exploded" });
    expect(error.event.original_event).to.deep.equal({ emits: [], fail: "exploded" });
    const logs = (await admin.get(`/v1/sources/${id}/event_summaries?event_name=$logs`)).body.data;
    expect(logs[0].metadata.name).to.equal("$logs");
    expect(logs[0].event.ok).to.equal(false);
    expect(logs[0].event.lines.some((l: { message: string }) => l.message.includes("exploded"))).to.equal(true);
  });

  it("an unhandled rejection fails the run as the component's error; what it emitted is kept; its isolate goes on", async () => {
    const created = await admin.post("/v1/sources", {
      component_code: `let runs = 0;
export default {
  name: "unhandled", version: "0.0.1", props: { http: "$.interface.http" },
  methods: { async notAwaited() { throw new Error("background helper failed"); } },
  async run() {
    runs++;
    this.$emit({ before: true, runs }, { summary: "emitted before" });
    if (runs > 1) return;
    this.notAwaited();
    await new Promise((r) => setTimeout(r, 20));
    this.$emit({ after: true });
  },
};`,
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.data.id as string;
    const outcome = (await admin.post(`/v1/sources/${id}/run`, {})).body.data;
    expect(outcome.ok).to.equal(false);
    expect(outcome.error).to.include({ name: "Error", message: "Unhandled promise rejection: background helper failed" });
    // Logged like Node's report of an unhandled rejection: with its stack.
    expect(outcome.logs.map((l: { message: string }) => l.message).join("\n")).to.include("at Object.notAwaited");
    expect(outcome.emitted.map((e: { channel: string }) => e.channel)).to.deep.equal(["", "", "$errors"]);
    const summaries = (await listed(id, "&event_name=")).map((x) => x.metadata.summary ?? x.event);
    expect(summaries).to.deep.equal([{ after: true }, "emitted before"]);
    const [error] = await listed(id, "&event_name=$errors");
    expect(error.event.error).to.include({ message: "Unhandled promise rejection: background helper failed" });
    // The next run is served by the same context: its module state survived.
    const next = (await admin.post(`/v1/sources/${id}/run`, {})).body.data;
    expect(next.ok, JSON.stringify(next.error)).to.equal(true);
    expect((await listed(id, "&event_name="))[0].event).to.deep.equal({ before: true, runs: 2 });
  });

  it("a huge emit is an error of the run, not a crash; the server keeps answering", async () => {
    const id = await deploy();
    const r = await admin.post(`/v1/sources/${id}/run`, { event: { emits: [] } });
    expect(r.status).to.equal(200);
    const huge = await admin.post("/v1/sources", {
      component_code: `export default { name: "Huge", version: "1", props: { http: "$.interface.http" },
        async run() { this.$emit("x".repeat(2 * 1024 * 1024)); } };`,
    });
    const outcome = (await admin.post(`/v1/sources/${huge.body.data.id}/run`, {})).body.data;
    expect(outcome.ok).to.equal(false);
    expect(outcome.error.message).to.match(/too large|limit|bytes/i);
    expect((await admin.get("/v1/users/me")).status).to.equal(200);
  });

  it("listings: newest first, limit and n, cursors, 1 KB truncation unless expand=event", async () => {
    const id = await deploy();
    await run(
      id,
      Array.from({ length: 12 }, (_, i) => e(undefined, { i })),
    );
    await run(id, [e(undefined, { big: "y".repeat(3000) })]);
    const first = (await admin.get(`/v1/sources/${id}/event_summaries?limit=5`)).body;
    expect(first.page_info).to.include({ total_count: 13, count: 5 });
    expect(first.data[0].event).to.deep.include({ $truncated: true });
    expect(first.data[0].event.bytes).to.be.greaterThan(3000);
    expect(first.data[0].event.preview).to.be.a("string").with.length.at.most(1024);
    expect(first.data[1].event).to.deep.equal({ i: 11 });
    const next = (await admin.get(`/v1/sources/${id}/event_summaries?limit=5&after=${first.page_info.end_cursor}`)).body;
    expect(next.data.map((x: any) => x.event.i)).to.deep.equal([7, 6, 5, 4, 3]);
    const back = (await admin.get(`/v1/sources/${id}/event_summaries?limit=5&before=${next.page_info.start_cursor}`)).body;
    expect(back.data.map((x: any) => x.id)).to.deep.equal(first.data.map((x: any) => x.id));
    expect((await admin.get(`/v1/sources/${id}/event_summaries?n=2`)).body.data).to.have.length(2);
    // n is an alias of limit: both at once must agree, not one silently win.
    expect((await admin.get(`/v1/sources/${id}/event_summaries?n=2&limit=2`)).body.data).to.have.length(2);
    const conflicting = await admin.get(`/v1/sources/${id}/event_summaries?n=2&limit=5`);
    expect(conflicting.status, JSON.stringify(conflicting.body)).to.equal(400);
    expect(conflicting.body.details).to.deep.equal([{ path: "query.n", message: "differs from query.limit" }]);
    const expanded = (await admin.get(`/v1/sources/${id}/event_summaries?limit=1&expand=event`)).body.data[0];
    expect(expanded.event.big).to.have.length(3000);
  });

  it("keeps the last 100 events", async () => {
    const id = await deploy();
    for (let batch = 0; batch < 3; batch++)
      await run(
        id,
        Array.from({ length: 50 }, (_, i) => e(undefined, batch * 50 + i)),
      );
    const all = await listed(id);
    expect(all).to.have.length(100);
    expect(all[0].event).to.equal(149);
    expect(all[99].event).to.equal(50);
    expect((await admin.get(`/v1/sources/${id}/event_summaries`)).body.page_info.total_count).to.equal(100);
  });

  describe("DELETE /sources/{id}/events (202, lands shortly after)", () => {
    let id: string;
    let ids: string[];
    const remaining = async (expected: number) => {
      for (let i = 0; i < 100; i++) {
        const now = (await listed(id)).map((x) => x.id).reverse();
        if (now.length === expected) return now;
        await new Promise((r) => setTimeout(r, 20));
      }
      return (await listed(id)).map((x) => x.id).reverse();
    };
    beforeEach(async () => {
      id = await deploy();
      await run(
        id,
        Array.from({ length: 6 }, (_, i) => e(undefined, i)),
      );
      ids = (await listed(id)).map((x) => x.id).reverse();
    });

    it("with start_id only: that event and all later ones", async () => {
      expect((await admin.delete(`/v1/sources/${id}/events?start_id=${ids[3]}`)).status).to.equal(202);
      expect(await remaining(3)).to.deep.equal(ids.slice(0, 3));
    });
    it("with end_id only: that event and all earlier ones", async () => {
      expect((await admin.delete(`/v1/sources/${id}/events?end_id=${ids[2]}`)).status).to.equal(202);
      expect(await remaining(3)).to.deep.equal(ids.slice(3));
    });
    it("with both: the inclusive range; the same id in both deletes one event", async () => {
      await admin.delete(`/v1/sources/${id}/events?start_id=${ids[1]}&end_id=${ids[3]}`);
      expect(await remaining(3)).to.deep.equal([ids[0], ids[4], ids[5]]);
      await admin.delete(`/v1/sources/${id}/events?start_id=${ids[4]}&end_id=${ids[4]}`);
      expect(await remaining(2)).to.deep.equal([ids[0], ids[5]]);
    });
    it("with neither: every event; bad ids are 400", async () => {
      await admin.delete(`/v1/sources/${id}/events`);
      expect(await remaining(0)).to.deep.equal([]);
      expect((await admin.delete(`/v1/sources/${id}/events?start_id=nope`)).status).to.equal(400);
      expect((await admin.delete(`/v1/sources/${id}/events?start_id=${ids[3]}&end_id=${ids[1]}`)).status).to.equal(400);
    });
  });
});
