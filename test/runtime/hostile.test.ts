// Hostile code: each attempt fails cleanly with an error, and the host keeps answering other work
// meanwhile and afterwards. One runner process here, so "meanwhile" means the same child.
import { expect } from "chai";
import { promises as fs } from "node:fs";
import type { InvocationOutcome, Runtime } from "../../src/runtime/index.js";
import { ComponentValidationError } from "../../src/runtime/index.js";
import { invocation, prepareCode, startRuntime } from "./support.js";

const TRIVIAL = `export default { name: "ok", version: "1", async run(e) { this.$emit({ pong: e.n }); } };`;

function hostile(body: string): string {
  return `export default { name: "hostile", version: "1", props: { db: "$.service.db" }, async run(event) { ${body} } };`;
}

describe("runtime: hostile code", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  let trivialOutcome: () => Promise<InvocationOutcome>;

  before(async () => {
    runtime = await startRuntime({ workers: 1, timeoutMs: 2000, memoryMb: 64, loadTimeoutMs: 1500 });
    const trivial = await prepareCode(runtime, TRIVIAL);
    let n = 0;
    trivialOutcome = () => runtime.invoke(invocation(trivial, { sourceId: `dc_trivial${n}`, event: { n: ++n } }));
  });
  after(async () => runtime.close());

  async function run(body: string, over: Parameters<typeof invocation>[1] = {}) {
    const prepared = await prepareCode(runtime, hostile(body));
    return runtime.invoke(invocation(prepared, over));
  }

  afterEach(async () => {
    // After every hostile run the host still serves ordinary work.
    const after = await trivialOutcome();
    expect(after.ok).to.equal(true);
  });

  it("process is the sandbox's: no host pid, environment, bindings or exit", async () => {
    const o = await run(`
      const tries = {};
      for (const name of ["binding", "dlopen", "kill", "exit", "abort", "chdir"]) {
        try { process[name]("x"); tries[name] = "ran"; } catch (e) { tries[name] = e.message; }
      }
      this.$emit({ pid: process.pid, env: Object.keys(process.env).sort(), tries, mainModule: typeof process.mainModule });`);
    expect(o.ok, JSON.stringify(o.error)).to.equal(true);
    const e = o.emits[0].event as { pid: number; env: string[]; tries: Record<string, string>; mainModule: string };
    expect(e.pid).to.equal(1);
    expect(e.env).to.deep.equal(["NODE_ENV", "PD_COMPONENT", "TMPDIR"]);
    for (const [name, message] of Object.entries(e.tries)) expect(message, name).to.match(/is not available in the sandbox/);
    expect(e.mainModule).to.equal("undefined");
  });

  it("require('fs') reaches only the run's in-memory /tmp; child_process fails the save; a dynamic require fails the run", async () => {
    const reading = await prepareCode(
      runtime,
      `const fs = require("fs"); module.exports = { name: "x", version: "1", async run() {
         const out = {};
         for (const p of ["/etc/passwd", "/proc/self/environ", "../etc/passwd", "/tmp/../../etc/passwd", "file:///etc/passwd"]) {
           try { fs.readFileSync(p.startsWith("file:") ? new URL(p) : p); out[p] = "read"; } catch (e) { out[p] = e.code; }
         }
         this.$emit(out);
       } };`,
    );
    const read = await runtime.invoke(invocation(reading));
    expect(read.emits[0].event).to.deep.equal({
      "/etc/passwd": "EACCES",
      "/proc/self/environ": "EACCES",
      "../etc/passwd": "EACCES",
      "/tmp/../../etc/passwd": "EACCES",
      "file:///etc/passwd": "EACCES",
    });
    const save = await prepareCode(
      runtime,
      `const cp = require("child_process"); module.exports = { name: "x", version: "1", async run() { cp.execSync("id"); } };`,
    ).catch((e: unknown) => e);
    expect(save).to.be.instanceOf(ComponentValidationError);
    expect((save as ComponentValidationError).problems[0].message).to.match(/"child_process", which is not available in the sandbox/);
    const o = await run(
      `const r = typeof require === "function" ? require : null; if (!r) throw new Error("no require"); r("f" + "s").readFileSync("/etc/passwd");`,
    );
    expect(o.ok).to.equal(false);
    expect(o.error?.message).to.match(/not available in the sandbox|no require/);
  });

  it("this.constructor.constructor('return process')() reaches only the sandbox's process", async () => {
    const o = await run(`
      const viaThis = this.constructor.constructor("return typeof process.binding")();
      const viaEmit = this.$emit.constructor("return this")();
      const viaDb = this.db.get.constructor.constructor("return globalThis")();
      this.$emit({
        viaThis,
        sameGlobal: viaEmit === globalThis && viaDb === globalThis,
        hidden: Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith("__hw_") && n !== "__hw_modules"),
        env: Object.keys(globalThis.process.env).length, req: typeof globalThis.require, mod: typeof globalThis.module,
      });
      this.constructor.constructor("return process")().binding("natives");`);
    expect(o.emits[0]?.event).to.deep.equal({
      viaThis: "function",
      sameGlobal: true,
      hidden: [],
      env: 3,
      req: "undefined",
      mod: "undefined",
    });
    expect(o.ok).to.equal(false);
    expect(o.error?.message).to.match(/process.binding\(\) is not available in the sandbox/);
  });

  it("prototype tampering of bridged objects stays inside the one isolate", async () => {
    // Built-ins the platform captured before the component ran keep its bookkeeping honest.
    const tamper = await prepareCode(
      runtime,
      hostile(`
        Object.prototype.polluted = "yes";
        JSON.stringify = () => ({ not: "a string" });
        JSON.parse = () => ({ forged: true });
        Object.getPrototypeOf(this.db).get = () => "hijacked";
        this.$emit.call = () => "hijacked";
        Function.prototype.apply = function () { throw new Error("apply hijacked"); };
        Promise.prototype.then = function () { return "hijacked"; };
        this.$emit({ after: "tampering", run: event.n });
      `),
    );
    const inv = invocation(tamper);
    for (const n of [1, 2]) {
      const o = await runtime.invoke({ ...inv, event: { n } });
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.warm).to.equal(n === 2);
      expect(o.emits).to.deep.equal([{ event: { after: "tampering", run: n }, meta: {} }]);
    }
    // Replacing built-ins the platform's code once used changes nothing any more: it uses
    // primordials captured before the component ran, and the db lives outside the isolate.
    const breaker = await prepareCode(
      runtime,
      hostile(
        `this.$emit({ first: true }); Array.prototype.push = function () { throw new Error("push hijacked"); }; this.db.set("k", "v");`,
      ),
    );
    const binv = invocation(breaker);
    const survived = await runtime.invoke(binv);
    expect(survived.ok, JSON.stringify(survived.error)).to.equal(true);
    expect(survived.emits).to.deep.equal([{ event: { first: true }, meta: {} }]);
    expect(survived).to.deep.include({ db: { k: "v" }, dbChanged: true });
    expect((await runtime.invoke(binv)).warm).to.equal(true);
    // Another source (its own isolate) sees pristine built-ins.
    const check = await prepareCode(
      runtime,
      `export default { name: "c", version: "1", props: { db: "$.service.db" }, async run() {
         const a = []; a.push(1);
         this.db.set("k", "v");
         this.$emit({ polluted: ({}).polluted ?? null, json: JSON.stringify({ a }), db: this.db.get("k") });
       } };`,
    );
    const clean = await runtime.invoke(invocation(check));
    expect(clean.ok).to.equal(true);
    expect(clean.emits[0]?.event).to.deep.equal({ polluted: null, json: '{"a":[1]}', db: "v" });
  });

  it("an infinite loop is cut off while another invocation completes meanwhile", async () => {
    const prepared = await prepareCode(runtime, hostile(`while (true) {}`));
    const started = Date.now();
    const looping = runtime.invoke(invocation(prepared));
    await new Promise((r) => setTimeout(r, 200));
    const meanwhile = await trivialOutcome();
    const meanwhileAt = Date.now() - started;
    const o = await looping;
    expect(meanwhile.ok).to.equal(true);
    expect(meanwhileAt).to.be.lessThan(o.wallMs);
    expect(o.ok).to.equal(false);
    expect(o.error).to.deep.include({
      name: "TimeoutError",
      code: "TIMEOUT",
      message: "the invocation did not finish within 2000 ms and was stopped",
    });
  });

  it("a promise that never settles is cut off by the timeout", async () => {
    const o = await run(`await new Promise(() => {});`, { limits: { timeoutMs: 800 } });
    expect(o.error).to.include({ code: "TIMEOUT" });
    expect(o.wallMs).to.be.greaterThanOrEqual(800);
  });

  it("a memory bomb hits the memory limit; the isolate is disposed, the next run starts fresh", async () => {
    const prepared = await prepareCode(
      runtime,
      hostile(
        `globalThis.runs = (globalThis.runs ?? 0) + 1; if (event.bomb) { const a = []; while (true) a.push(new Array(100000).fill(Math.random())); } this.$emit({ runs });`,
      ),
    );
    const inv = invocation(prepared);
    const warmup = await runtime.invoke({ ...inv, event: {} });
    expect(warmup.emits[0]?.event).to.deep.equal({ runs: 1 });
    const o = await runtime.invoke({ ...inv, event: { bomb: true } });
    expect(o.ok).to.equal(false);
    expect(o.error).to.deep.include({
      name: "MemoryLimitError",
      code: "MEMORY_LIMIT",
      message: "the invocation exceeded the memory limit of 64 MB and was stopped",
    });
    const next = await runtime.invoke({ ...inv, event: {} });
    expect(next.warm).to.equal(false);
    expect(next.emits[0]?.event).to.deep.equal({ runs: 1 });
  });

  it("memory outside the JS heap is bounded too: typed arrays fail, WebAssembly is absent", async () => {
    const typed = await run(
      `const bufs = []; for (let i = 0; i < 100; i++) bufs.push(new Uint8Array(50e6).fill(1)); this.$emit({ n: bufs.length });`,
    );
    expect(typed.ok).to.equal(false);
    expect(typed.error?.message).to.match(/Array buffer allocation failed|memory limit/);
    const wasm = await run(`this.$emit({ wasm: typeof WebAssembly }); new WebAssembly.Memory({ initial: 1, maximum: 65536 }).grow(20000);`);
    expect(wasm.emits[0]?.event).to.deep.equal({ wasm: "undefined" });
    expect(wasm.error).to.include({ name: "ReferenceError", message: "WebAssembly is not defined" });
  });

  it("deep recursion is a RangeError of the run", async () => {
    const o = await run(`const f = (n) => f(n + 1) + 1; f(0);`);
    expect(o.error).to.include({ name: "RangeError", message: "Maximum call stack size exceeded", code: "USER_ERROR" });
  });

  it("a huge $emit is refused", async () => {
    const o = await run(`this.$emit({ big: "x".repeat(20 * 1024 * 1024) });`);
    expect(o.error?.name).to.equal("EmitError");
    expect(o.error?.message).to.match(/over the limit of 524288 bytes per event/);
    expect(o.emits).to.deep.equal([]);
  });

  it("a flood of console output is truncated, and says so", async () => {
    const o = await run(
      `for (let i = 0; i < 200000; i++) console.log("line " + i); console.log("y".repeat(100000)); this.$emit({ done: true });`,
    );
    expect(o.ok).to.equal(true);
    expect(o.emits).to.deep.equal([{ event: { done: true }, meta: {} }]);
    expect(o.logs.length).to.equal(2001);
    const last = o.logs[o.logs.length - 1];
    expect(last.level).to.equal("system");
    expect(last.message).to.equal(
      "[log output truncated: 198001 more console line(s) dropped; the limit is 2000 lines and 262144 bytes per invocation]",
    );
  });

  it("a component that loops while loading fails the save cleanly", async () => {
    const err = await prepareCode(runtime, `while (true) {} export default { name: "x", version: "1", async run() {} };`).catch(
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ComponentValidationError);
    expect((err as ComponentValidationError).problems[0].message).to.match(
      /could not be loaded: the invocation did not finish within 1500 ms/,
    );
  });

  it("a runner process that dies mid-invocation is replaced; the invocation fails clearly", async () => {
    const prepared = await prepareCode(runtime, hostile(`await new Promise((r) => setTimeout(r, 1500)); this.$emit({ survived: true });`));
    const [pid] = runtime.pids();
    const pending = runtime.invoke(invocation(prepared));
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid!, "SIGKILL");
    const o = await pending;
    expect(o.ok).to.equal(false);
    expect(o.error).to.deep.include({
      name: "RunnerCrashedError",
      code: "RUNNER_CRASHED",
      message: "the runner process exited unexpectedly (signal SIGKILL); the invocation was aborted",
    });
    await runtime.ready();
    expect(runtime.pids()[0]).to.be.a("number").and.not.equal(pid);
  });

  it("a runner process that stops answering is killed by the heartbeat and replaced", async () => {
    const watched = await startRuntime({ workers: 1, heartbeatIntervalMs: 200, heartbeatTimeoutMs: 1000, timeoutMs: 10_000 });
    try {
      const prepared = await prepareCode(watched, hostile(`await new Promise((r) => setTimeout(r, 500)); this.$emit({ fine: true });`));
      const [pid] = watched.pids();
      const pending = watched.invoke(invocation(prepared));
      await new Promise((r) => setTimeout(r, 100));
      process.kill(pid!, "SIGSTOP");
      const o = await pending;
      expect(o.error).to.deep.include({ name: "RunnerUnresponsiveError", code: "RUNNER_UNRESPONSIVE" });
      await watched.ready();
      const next = await watched.invoke(invocation(prepared));
      expect(next.emits).to.deep.equal([{ event: { fine: true }, meta: {} }]);
    } finally {
      await watched.close();
    }
  });

  it("runner processes get none of the host's environment variables", async () => {
    process.env["HEADWATER_TEST_SECRET"] = "must-not-leak";
    const fresh = await startRuntime({ workers: 1 });
    try {
      const [pid] = fresh.pids();
      const names = (await fs.readFile(`/proc/${pid}/environ`, "utf8"))
        .split("\0")
        .filter(Boolean)
        .map((kv) => kv.split("=")[0]);
      // Only Node's own IPC channel plumbing is there, and the operator's extra certificate authorities if set.
      const expected = [
        "NODE_CHANNEL_FD",
        "NODE_CHANNEL_SERIALIZATION_MODE",
        ...(process.env.NODE_EXTRA_CA_CERTS ? ["NODE_EXTRA_CA_CERTS"] : []),
      ];
      expect(names.sort()).to.deep.equal(expected);
    } finally {
      delete process.env["HEADWATER_TEST_SECRET"];
      await fresh.close();
    }
  });
});
