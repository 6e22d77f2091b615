import { expect } from "chai";
import type { Runtime } from "../../src/runtime/index.js";
import { invocation, prepareCode, startRuntime } from "./support.js";

// invokeBatch: one message to the runner child for a source's runs, each with its own outcome.

const CODE = `export default {
  name: "batch", version: "1",
  props: { db: "$.service.db", http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const count = (this.db.get("count") ?? 0) + 1;
    this.db.set("count", count);
    console.log("run " + event.n);
    if (event.fail) throw new Error("fails " + event.n);
    if (event.hang) await new Promise(() => {});
    if (event.big) this.$emit({ text: "x".repeat(600 * 1024) });
    this.$emit({ n: event.n, count }, { id: event.n });
    this.http.respond({ status: 200, body: "n" + event.n });
  },
};`;

describe("runtime: invokeBatch", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  before(async () => {
    runtime = await startRuntime({ timeoutMs: 1000 });
  });
  after(() => runtime.close());

  it("runs in order, each on the db the previous run left, each with its own outcome, logs and response", async () => {
    const prepared = await prepareCode(runtime, CODE);
    const base = invocation(prepared, { http: { endpoint: "http://127.0.0.1/e/x", customResponse: true } });
    const events = [{ n: 1 }, { n: 2, fail: true }, { n: 3, hang: true }, { n: 4, big: true }, { n: 5 }];
    const outcomes = await runtime.invokeBatch(events.map((event, i) => ({ ...base, invocationId: `inv_${i}`, event, db: { count: 10 } })));
    expect(outcomes.map((o) => o.ok)).to.deep.equal([true, false, false, false, true]);
    expect(outcomes.map((o) => o.error?.code)).to.deep.equal([undefined, "USER_ERROR", "TIMEOUT", "LIMIT_EXCEEDED", undefined]);
    // Only the first run gets the given db; each db write is kept, also by a failed run.
    expect(outcomes.map((o) => o.db["count"])).to.deep.equal([11, 12, 13, 14, 15]);
    expect(outcomes[0].emits.map((e) => e.event)).to.deep.equal([{ n: 1, count: 11 }]);
    expect(outcomes[4].emits.map((e) => e.event)).to.deep.equal([{ n: 5, count: 15 }]);
    expect(outcomes[0].response?.body).to.equal("n1");
    expect(outcomes[4].response?.body).to.equal("n5");
    expect(outcomes[1].response).to.equal(undefined);
    outcomes.forEach((o, i) => expect(o.logs.map((l) => l.message)).to.include(`run ${events[i].n}`));
  });

  it("refuses a batch that mixes sources", async () => {
    const prepared = await prepareCode(runtime, CODE);
    const a = invocation(prepared);
    const b = invocation(prepared);
    let error: unknown;
    await runtime.invokeBatch([a, b]).catch((e: unknown) => (error = e));
    expect((error as Error)?.name).to.equal("InvalidInvocationError");
  });
});
