// A run enters its isolate on the runner child's own thread when nothing else executes there, and
// its synchronous part may hold that thread for a short slice only (IsolateSlot.invoke): a run
// that computes past the slice is stopped, everything it did so far is discarded, and it runs
// again on isolated-vm's pool. Its effects happen exactly once, and the source's later runs go
// to the pool directly, in their warm context.
import { expect } from "chai";
import type { Runtime } from "../../src/runtime/index.js";
import { invocation, prepareCode, startRuntime, startServer, type TestServer } from "./support.js";

const SLOW = `let attempts = 0;
export default {
  name: "computes-long", version: "0.0.1",
  props: { db: "$.service.db" },
  async run(event) {
    attempts++;
    console.log("attempt " + attempts);
    this.db.set("n", (this.db.get("n") ?? 0) + 1);
    // Asked of the host before the computing, answered after it.
    const hit = fetch(event.hit).then((r) => r.text());
    this.$emit({ attempts });
    const until = Date.now() + event.spinMs; let spins = 0;
    while (Date.now() < until) spins++;
    this.$emit({ answer: await hit, spun: spins > 0 });
  },
};`;

const AWAITS_THEN_COMPUTES = `let attempts = 0;
export default {
  name: "awaits-then-computes", version: "0.0.1",
  async run(event) {
    attempts++;
    const answer = await fetch(event.hit).then((r) => r.text());
    const until = Date.now() + event.spinMs; while (Date.now() < until);
    this.$emit({ attempts, answer });
  },
};`;

describe("runtime: runs entered on the runner's thread", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  let server: TestServer;

  before(async () => {
    runtime = await startRuntime({ workers: 1, allowPrivateNetworks: true });
    server = await startServer((_req, res) => res.end("hi"));
  });
  after(async () => {
    await runtime.close();
    await server.close();
  });

  it("a run computing past the slice runs again on the pool: its emits, logs, db writes and HTTP requests happen once", async () => {
    const prepared = await prepareCode(runtime, SLOW);
    const inv = invocation(prepared, { event: { hit: `${server.url}/slow`, spinMs: 150 } });
    const first = await runtime.invoke(inv);
    expect(first.ok, JSON.stringify(first.error)).to.equal(true);
    expect(first.emits.map((e) => e.event)).to.deep.equal([{ attempts: 1 }, { answer: "hi", spun: true }]);
    expect(first.logs.map((l) => l.message)).to.deep.equal(["attempt 1"]);
    expect(first.db).to.deep.equal({ n: 1 });
    expect(server.requests.filter((r) => r.url === "/slow")).to.have.length(1);

    // The source's next run goes to the pool directly, in the context its first run left there.
    const second = await runtime.invoke({ ...inv, invocationId: `${inv.invocationId}-2`, db: first.db });
    expect(second.ok, JSON.stringify(second.error)).to.equal(true);
    expect(second.warm).to.equal(true);
    expect(second.emits.map((e) => e.event)).to.deep.equal([{ attempts: 2 }, { answer: "hi", spun: true }]);
    expect(second.logs.map((l) => l.message)).to.deep.equal(["attempt 2"]);
    expect(second.db).to.deep.equal({ n: 2 });
    expect(server.requests.filter((r) => r.url === "/slow")).to.have.length(2);
  });

  it("what a run computes after it awaited the host is not cut by the slice", async () => {
    const prepared = await prepareCode(runtime, AWAITS_THEN_COMPUTES);
    const inv = invocation(prepared, { event: { hit: `${server.url}/awaits`, spinMs: 150 } });
    for (const attempts of [1, 2, 3]) {
      const o = await runtime.invoke({ ...inv, invocationId: `${inv.invocationId}-${attempts}` });
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      // Run once each, in one warm context: the module's counter goes on.
      expect(o.emits.map((e) => e.event)).to.deep.equal([{ attempts, answer: "hi" }]);
    }
    expect(server.requests.filter((r) => r.url === "/awaits")).to.have.length(3);
  });

  it("quick runs keep their warm context, their order of callbacks and their response", async () => {
    const prepared = await prepareCode(
      runtime,
      `let runs = 0;
       export default { name: "quick", version: "0.0.1", props: { http: { type: "$.interface.http", customResponse: true } },
         async run(event) {
           runs++;
           console.log("before " + runs);
           this.$emit({ runs, n: event.n });
           this.http.respond({ status: 200, body: "run " + runs });
           console.log("after " + runs);
         } };`,
    );
    const inv = invocation(prepared);
    for (const n of [1, 2, 3]) {
      const o = await runtime.invoke({ ...inv, invocationId: `${inv.invocationId}-${n}`, event: { n } });
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits.map((e) => e.event)).to.deep.equal([{ runs: n, n }]);
      expect(o.logs.map((l) => l.message)).to.deep.equal([`before ${n}`, `after ${n}`]);
      expect(o.response).to.deep.include({ status: 200, body: `run ${n}` });
    }
  });
});
