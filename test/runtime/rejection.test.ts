// An unhandled promise rejection in a run: the run fails as the component's error (the rejection's
// name, message and stack), what it emitted is kept, and its isolate is not discarded (module state
// survives to the next run). Only the platform's own failures are sandbox failures.
import { expect } from "chai";
import { ComponentValidationError, type Runtime } from "../../src/runtime/index.js";
import { invocation, prepareCode, startRuntime, startServer } from "./support.js";

/** A source whose module state counts its runs in the context (lost when the isolate is discarded). */
function source(body: string, methods = ""): string {
  return `let runs = 0;
export default {
  name: "unhandled", version: "0.0.1", props: { http: "$.interface.http" },
  methods: { async notAwaited(message) { throw new Error(message); } ${methods} },
  async run(event) {
    runs++;
    ${body}
  },
};`;
}

describe("runtime: unhandled promise rejections", function () {
  this.timeout(60_000);
  let runtime: Runtime;

  before(async () => {
    runtime = await startRuntime({ workers: 1, timeoutMs: 3000, memoryMb: 64 });
  });
  after(async () => runtime.close());

  it("a rejection nobody handles fails the run as a user error; emits are kept; the isolate is not discarded", async () => {
    const prepared = await prepareCode(
      runtime,
      source(`
        if (event.reject) {
          this.$emit({ before: true }, { summary: "emitted before" });
          this.notAwaited("background helper failed");
          await new Promise((r) => setTimeout(r, 20));
          this.$emit({ after: true });
          return;
        }
        this.$emit({ runs });`),
    );
    const inv = invocation(prepared);
    const failed = await runtime.invoke({ ...inv, event: { reject: true } });
    expect(failed.ok).to.equal(false);
    expect(failed.error).to.include({ name: "Error", code: "USER_ERROR" });
    expect(failed.error?.message).to.equal("Unhandled promise rejection: background helper failed");
    expect(failed.error?.stack)
      .to.be.a("string")
      .and.match(/^Error: background helper failed\n/);
    expect(failed.error?.stack).to.include("notAwaited");
    expect(failed.emits).to.deep.equal([
      { event: { before: true }, meta: { summary: "emitted before" } },
      { event: { after: true }, meta: {} },
    ]);
    expect(failed.logs.map((l) => l.message).join("\n")).to.include("background helper failed");
    // The same context goes on: the module state of the failed run is still there.
    const next = await runtime.invoke({ ...inv, event: {} });
    expect(next.ok, JSON.stringify(next.error)).to.equal(true);
    expect(next.warm).to.equal(true);
    expect(next.emits).to.deep.equal([{ event: { runs: 2 }, meta: {} }]);
  });

  it("a rejection in a timer callback or after an await fails the run too; the first one is reported", async () => {
    const prepared = await prepareCode(
      runtime,
      source(`
        await new Promise((r) => setTimeout(r, 5));
        this.$emit({ step: 1 });
        setTimeout(() => { Promise.reject(new TypeError("in a timer")); }, 1);
        await new Promise((r) => setTimeout(r, 30));
        this.notAwaited("second");
        await new Promise((r) => setTimeout(r, 5));
        this.$emit({ step: 2 });`),
    );
    const inv = invocation(prepared);
    const o = await runtime.invoke(inv);
    expect(o.ok).to.equal(false);
    expect(o.error).to.include({ name: "TypeError", code: "USER_ERROR", message: "Unhandled promise rejection: in a timer" });
    expect(o.emits.map((e) => e.event)).to.deep.equal([{ step: 1 }, { step: 2 }]);
    const next = await runtime.invoke(inv);
    expect(next.warm).to.equal(true);
  });

  it("on isolated-vm's pool too (a run that computes past the synchronous slice)", async () => {
    const prepared = await prepareCode(
      runtime,
      source(`
        const until = Date.now() + 40;
        while (Date.now() < until) {}
        this.$emit({ before: true });
        this.notAwaited("after computing");
        await new Promise((r) => setTimeout(r, 5));
        this.$emit({ runs });`),
    );
    const inv = invocation(prepared);
    const o = await runtime.invoke(inv);
    expect(o.ok).to.equal(false);
    expect(o.error).to.include({ name: "Error", code: "USER_ERROR", message: "Unhandled promise rejection: after computing" });
    // The run computed past the slice, and ran again from its start in a new context on the pool.
    expect(o.emits).to.deep.equal([
      { event: { before: true }, meta: {} },
      { event: { runs: 1 }, meta: {} },
    ]);
    const next = await runtime.invoke(inv);
    expect(next.warm).to.equal(true);
    expect(next.emits[1]).to.deep.equal({ event: { runs: 2 }, meta: {} });
  });

  it("a rejected value that is no Error is named; a rejection handled in the same turn is no failure", async () => {
    const prepared = await prepareCode(
      runtime,
      source(`
        if (event.plain) { Promise.reject("just a string"); return; }
        const late = Promise.reject(new Error("handled later"));
        await null;
        late.catch(() => {});
        const caught = this.notAwaited("caught").catch((e) => e.message);
        this.$emit({ caught: await caught });`),
    );
    const inv = invocation(prepared);
    const plain = await runtime.invoke({ ...inv, event: { plain: true } });
    expect(plain.ok).to.equal(false);
    expect(plain.error).to.include({ code: "USER_ERROR", message: 'Unhandled promise rejection: non-error rejection: "just a string"' });
    const fine = await runtime.invoke({ ...inv, event: {} });
    expect(fine.ok, JSON.stringify(fine.error)).to.equal(true);
    expect(fine.warm).to.equal(true);
    expect(fine.emits).to.deep.equal([{ event: { caught: "caught" }, meta: {} }]);
  });

  it("an action with an unhandled rejection fails without a return value", async () => {
    const prepared = await prepareCode(
      runtime,
      `export default { name: "a", version: "1", type: "action", props: {},
        async run({ $ }) { Promise.reject(new RangeError("lost")); await new Promise((r) => setTimeout(r, 5)); $.export("x", 1); return { value: 1 }; } };`,
    );
    const o = await runtime.invoke(invocation(prepared));
    expect(o.ok).to.equal(false);
    expect(o.error).to.include({ name: "RangeError", code: "USER_ERROR", message: "Unhandled promise rejection: lost" });
    expect(o).to.not.have.property("returnValue");
    expect(o).to.not.have.property("exports");
  });

  it("a rejection the module's code leaves at load fails the load (the save), naming it", async () => {
    const code = `(async () => { throw new Error("top-level helper failed"); })();
       export default { name: "l", version: "1", async run() { this.$emit({ ran: true }); } };`;
    const err = await prepareCode(runtime, code).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ComponentValidationError);
    expect((err as Error).message).to.include(
      "the component threw while loading: Error: Unhandled promise rejection: top-level helper failed",
    );
  });

  it("the platform's own failure is still a sandbox failure that discards the isolate", async () => {
    const server = await startServer((_req, res) => res.end("hi"));
    try {
      // The platform's code that hands a failed request's answer to the run reads `response` off
      // it, which the component made an inherited getter that throws (Map methods no longer do:
      // that code takes them from primordials, as the end of an invocation may wait for requests).
      const prepared = await prepareCode(
        runtime,
        source(`
          if (event.url) {
            this.$emit({ before: true });
            const pending = fetch(event.url).catch(() => {});
            Object.defineProperty(Object.prototype, "response", { get() { throw new Error("Object.prototype.response replaced"); }, configurable: true });
            await pending;
          }
          this.$emit({ runs });`),
      );
      const inv = invocation(prepared);
      const closed = await startServer((_req, res) => res.end());
      await closed.close();
      const o = await runtime.invoke({ ...inv, event: { url: closed.url } });
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({ name: "SandboxError", code: "SANDBOX_FAILED" });
      expect(o.error?.message).to.include("Object.prototype.response replaced").and.include("its isolate was discarded");
      expect(o.emits).to.deep.equal([{ event: { before: true }, meta: {} }]);
      const next = await runtime.invoke({ ...inv, event: {} });
      expect(next).to.deep.include({ ok: true, warm: false });
      expect(next.emits).to.deep.equal([{ event: { runs: 1 }, meta: {} }]);
    } finally {
      await server.close();
    }
  });
});
