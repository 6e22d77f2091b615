// The sandbox boundary under attack: components that replace built-ins to forge their result,
// try to pass limits, nest values deeply, hang, exhaust memory, reach host code or inject
// response headers. For each: (a) the runtime still answers a normal invocation afterwards,
// from the same runner process (nothing crashed), (b) the outcome is the clear error, or the
// correct result when the tampering is harmless, (c) nothing in the outcome is over a limit.
import { expect } from "chai";
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { jsonDepth } from "../../src/json/bounded.js";
import { DEFAULT_LIMITS, type InvocationOutcome, type PreparedComponent, type Runtime } from "../../src/runtime/index.js";
import { preludeSource } from "../../src/runtime/sandbox/preludeBundle.js";
import { messagesOf } from "../../src/runtime/sandbox/turnBatch.js";
import { invocation, prepareCode, startRuntime } from "./support.js";

const L = DEFAULT_LIMITS;
const TRIVIAL = `export default { name: "ok", version: "1", async run(e) { this.$emit({ pong: e.n }); } };`;
const DEEP = (n: number, leaf = "1") => `(() => { let v = ${leaf}; for (let i = 0; i < ${n}; i++) v = { v }; return v; })()`;

function source(body: string, extra = ""): string {
  return `export default { name: "hostile", version: "1", props: { db: "$.service.db", http: { type: "$.interface.http", customResponse: true } }, ${extra}
    async run(event) { ${body} } };`;
}

function action(body: string): string {
  return `export default { name: "hostile-action", version: "1", type: "action", props: {}, async run({ $, steps }) { ${body} } };`;
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? "");

/** (c): whatever the component did, the outcome stays within every limit. */
function assertWithinLimits(o: InvocationOutcome): void {
  expect(o.emits.length, "emits").to.be.at.most(L.maxEmitsPerRun);
  for (const e of o.emits) {
    expect(bytes(e.event), "emit size").to.be.at.most(L.maxEmitBytes);
    expect(jsonDepth(JSON.stringify(e.event)), "emit depth").to.be.at.most(128);
    expect(bytes(e.meta), "meta size").to.be.at.most(4096);
  }
  const dbSize = Object.entries(o.db).reduce((n, [k, v]) => n + Buffer.byteLength(k) + bytes(v), 0);
  expect(dbSize, "db size").to.be.at.most(L.maxDbBytes);
  expect(jsonDepth(JSON.stringify(o.db)), "db depth").to.be.at.most(128);
  expect(o.logs.length, "log lines").to.be.at.most(L.maxLogLines + 1);
  expect(
    o.logs.reduce((n, l) => n + l.message.length, 0),
    "log bytes",
  ).to.be.at.most(L.maxLogBytes + 2 * L.maxLogLineChars);
  if (o.response) {
    const body = o.response.body;
    const size = body === null ? 0 : typeof body === "string" ? Buffer.byteLength(body) : Buffer.from(body.base64, "base64").length;
    expect(size, "response body").to.be.at.most(L.maxResponseBytes);
    expect(Object.keys(o.response.headers).length, "response headers").to.be.at.most(100);
  }
  if (o.returnValue !== undefined) expect(bytes(o.returnValue), "return value").to.be.at.most(L.maxEmitBytes);
  if (o.exports !== undefined) expect(bytes(o.exports), "exports").to.be.at.most(L.maxEmitBytes);
  if (o.error) expect(o.error.message.length + (o.error.stack?.length ?? 0), "error").to.be.at.most(32 * 1024);
}

describe("runtime: the sandbox boundary", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  let pid: number | undefined;
  let n = 0;
  let trivial: PreparedComponent;

  before(async () => {
    // Room for the 100,000-level cases on a loaded machine; the tests of the clock set their own.
    runtime = await startRuntime({ workers: 1, timeoutMs: 10_000, memoryMb: 64 });
    trivial = await prepareCode(runtime, TRIVIAL);
    pid = runtime.pids()[0];
  });
  after(async () => runtime.close());

  afterEach(async () => {
    // (a): the same runner process still serves ordinary work: nothing crashed.
    const o = await runtime.invoke(invocation(trivial, { sourceId: `dc_trivial${++n}`, event: { n } }));
    expect(o.ok, JSON.stringify(o.error)).to.equal(true);
    expect(o.emits).to.deep.equal([{ event: { pong: n }, meta: {} }]);
    expect(runtime.pids()[0], "runner pid").to.equal(pid);
  });

  async function run(code: string, over: Parameters<typeof invocation>[1] = {}): Promise<InvocationOutcome> {
    const prepared = await prepareCode(runtime, code);
    const o = await runtime.invoke(invocation(prepared, over));
    assertWithinLimits(o);
    return o;
  }

  describe("prototype tampering cannot forge the result", () => {
    it("Array.prototype.join replaced: the db is what db.set accepted, not what join returns", async () => {
      const o = await run(
        source(`
          Array.prototype.join = function () { return '"big":"' + "x".repeat(1e6) + '"'; };
          this.db.set("k", "v");
          this.$emit({ joined: ["a", "b"].join(",").length });`),
        { db: { old: 1 } },
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o).to.deep.include({ db: { old: 1, k: "v" }, dbChanged: true });
      expect(o.emits).to.deep.equal([{ event: { joined: 1_000_008 }, meta: {} }]);
    });

    it("String.prototype.slice replaced: a run that throws is still reported as failed", async () => {
      const o = await run(
        source(`
          this.$emit({ before: true });
          String.prototype.slice = function () { return '{"ok":true}'; };
          String.prototype.substring = String.prototype.slice;
          throw new Error("boom");`),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({ name: "Error", message: "boom", code: "USER_ERROR" });
      expect(o.emits).to.deep.equal([{ event: { before: true }, meta: {} }]);
    });

    it("Array push/map/slice/forEach and String replace/concat replaced: emits, db and logs are correct", async () => {
      const o = await run(
        source(`
          const boom = function () { throw new Error("hijacked"); };
          for (const m of ["push", "map", "slice", "forEach", "filter", "concat", "indexOf", "includes"]) Array.prototype[m] = boom;
          for (const m of ["replace", "concat", "toLowerCase", "charCodeAt", "split", "trim"]) String.prototype[m] = boom;
          this.db.set("k", { list: [1, 2] });
          console.log("logged");
          this.$emit({ got: this.db.get("k") }, { id: "e1", summary: "one" });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.deep.equal([{ event: { got: { list: [1, 2] } }, meta: { id: "e1", summary: "one" } }]);
      expect(o.db).to.deep.equal({ k: { list: [1, 2] } });
      expect(o.logs.map((l) => l.message)).to.deep.equal(["logged"]);
    });

    it("JSON.stringify and JSON.parse replaced: emits and db are what the component gave", async () => {
      const o = await run(
        source(`
          JSON.stringify = () => '{"forged":true}';
          JSON.parse = () => ({ forged: true });
          this.$emit({ a: 1 });
          this.db.set("k", { b: 2 });
          this.$emit({ read: this.db.get("k") });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits.map((e) => e.event)).to.deep.equal([{ a: 1 }, { read: { b: 2 } }]);
      expect(o.db).to.deep.equal({ k: { b: 2 } });
    });

    it("Object.prototype accessors for ok, error, db, result and returnValue cannot turn a failure into success", async () => {
      const o = await run(
        source(`
          for (const key of ["ok", "error", "db", "dbChanged", "result", "returnValue", "exports", "exited", "name", "message", "code"]) {
            Object.defineProperty(Object.prototype, key, { get() { return key === "ok" ? true : undefined; }, set() {}, configurable: true });
          }
          this.db.set("k", 1);
          throw new TypeError("real failure");`),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({ name: "TypeError", message: "real failure", code: "USER_ERROR" });
      expect(o).to.deep.include({ db: { k: 1 }, dbChanged: true });
    });

    it("Object.prototype.toJSON returning a forged result cannot make a failed run ok", async () => {
      const o = await run(
        source(`
          this.$emit({ a: 1 });
          Object.prototype.toJSON = function () { return { ok: true, error: null, forged: true }; };
          throw new RangeError("still failing");`),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({ name: "RangeError", message: "still failing", code: "USER_ERROR" });
      expect(o.emits).to.deep.equal([{ event: { a: 1 }, meta: {} }]);
    });

    it("Function.prototype.call/apply/bind and Reflect.apply replaced: run, methods and hooks still work, warm too", async () => {
      const prepared = await prepareCode(
        runtime,
        source(
          `
          const boom = function () { throw new Error("hijacked"); };
          Function.prototype.call = boom; Function.prototype.apply = boom; Function.prototype.bind = boom; Reflect.apply = boom;
          this.$emit({ doubled: this.double(event.n) });`,
          `methods: { double(n) { return this.times(n, 2); }, times(a, b) { return a * b; } }, hooks: { async deploy() { this.db.set("deployed", this.double(4)); } },`,
        ),
      );
      const inv = invocation(prepared);
      for (const [i, k] of [21, 5].entries()) {
        const o = await runtime.invoke({ ...inv, event: { n: k } });
        assertWithinLimits(o);
        expect(o.ok, JSON.stringify(o.error)).to.equal(true);
        expect(o.warm).to.equal(i === 1);
        expect(o.emits).to.deep.equal([{ event: { doubled: 2 * k }, meta: {} }]);
      }
      const deployed = await runtime.invoke({ ...inv, method: "deploy" });
      expect(deployed).to.deep.include({ ok: true, warm: true, db: { deployed: 8 } });
    });

    it("Promise.prototype.then and constructor replaced: an async run that rejects is reported as failed", async () => {
      const o = await run(
        source(`
          Promise.prototype.constructor = function Fake() {};
          Promise.prototype.then = function (onFulfilled) { if (typeof onFulfilled === "function") onFulfilled("forged"); return this; };
          Promise.prototype.catch = function () { return this; };
          Promise.prototype.finally = function () { return this; };
          await null;
          this.$emit({ before: true });
          throw new Error("rejected for real");`),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({ name: "Error", message: "rejected for real", code: "USER_ERROR" });
      expect(o.emits).to.deep.equal([{ event: { before: true }, meta: {} }]);
      // An action cannot swap its return value that way either.
      const a = await run(
        action(`
          Promise.prototype.constructor = function Fake() {};
          Promise.prototype.then = function (onFulfilled) { if (typeof onFulfilled === "function") onFulfilled("forged"); return this; };
          await new Promise((r) => setTimeout(r, 5));
          return { real: true };`),
      );
      expect(a.ok, JSON.stringify(a.error)).to.equal(true);
      expect(a.returnValue).to.deep.equal({ real: true });
    });

    it("a species constructor installed on Promise does not break or forge the end of a run", async () => {
      const o = await run(
        source(`
          class Evil extends Promise { constructor(executor) { super(executor); throw new Error("species hijacked"); } }
          Object.defineProperty(Promise, Symbol.species, { get() { return Evil; }, configurable: true });
          await new Promise((r) => setTimeout(r, 5));
          this.$emit({ done: true });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.deep.equal([{ event: { done: true }, meta: {} }]);
    });

    it("Symbol.toPrimitive, throwing getters and prepareStackTrace on a thrown error give a clear, bounded error", async () => {
      const o = await run(
        source(`
          const e = new Error("base");
          Object.defineProperty(e, "message", { get() { return { [Symbol.toPrimitive]() { return "m".repeat(1e6); } }; } });
          Object.defineProperty(e, "name", { get() { throw new Error("name getter"); } });
          Error.prepareStackTrace = () => ({ not: "a string" });
          globalThis.String = () => 42;
          throw e;`),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.deep.equal({ name: "Error", message: "m".repeat(8192), code: "USER_ERROR" });
      const odd = await run(source(`throw { [Symbol.toPrimitive]() { throw new Error("no"); }, toJSON() { throw new Error("no"); } };`));
      expect(odd.error).to.deep.equal({ name: "Error", message: "non-error thrown: [unprintable value]", code: "USER_ERROR" });
    });

    it("toJSON that throws or returns a huge value in $emit is a clear error; nothing over the limit is kept", async () => {
      const o = await run(
        source(`
          const results = [];
          for (const ev of [{ toJSON() { throw new Error("toJSON boom"); } }, { toJSON() { return "x".repeat(600 * 1024); } }, { get boom() { throw new Error("getter boom"); } }]) {
            try { this.$emit(ev); results.push("ok"); } catch (e) { results.push(e.name + ": " + e.message); }
          }
          this.$emit({ results });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.have.length(1);
      expect((o.emits[0].event as { results: string[] }).results).to.deep.equal([
        "TypeError: $emit: the event is not JSON-serializable: toJSON boom",
        `EmitError: $emit: the event is ${600 * 1024 + 2} bytes of JSON, over the limit of 524288 bytes per event`,
        "TypeError: $emit: the event is not JSON-serializable: getter boom",
      ]);
    });

    it("Object.prototype.get and .set (descriptor poisoning) do not break the platform", async () => {
      const o = await run(
        source(
          `
          Object.prototype.get = function () { return "poisoned"; };
          Object.prototype.set = function () {};
          Object.prototype.value = "poisoned";
          this.db.set("k", [1]);
          this.$emit({ m: this.m(), read: this.db.get("k") });`,
          `methods: { m() { return "method"; } },`,
        ),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.deep.equal([{ event: { m: "method", read: [1] }, meta: {} }]);
      expect(o.db).to.deep.equal({ k: [1] });
    });

    it("replaced iterators, Map methods, index setters and globals do not break the end of a run", async () => {
      const o = await run(
        source(`
          setTimeout(() => {}, 60000);
          setInterval(() => {}, 10);
          const pending = fetch("http://127.0.0.1:9/").catch(() => {});
          const boom = function () { throw new Error("hijacked"); };
          Array.prototype[Symbol.iterator] = boom;
          Map.prototype[Symbol.iterator] = boom;
          Map.prototype.forEach = boom; Map.prototype.clear = boom; Map.prototype.delete = boom;
          Object.defineProperty(Array.prototype, "0", { set: boom, get: boom, configurable: true });
          this.$emit({ done: true });
          globalThis.Object = undefined; globalThis.Reflect = undefined; globalThis.Promise = undefined; globalThis.JSON = undefined; globalThis.Map = undefined;`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.deep.equal([{ event: { done: true }, meta: {} }]);
    });

    it("tampering in one run cannot make a later run of the warm isolate lie", async () => {
      const prepared = await prepareCode(
        runtime,
        source(`
          if (event.step === 1) {
            Promise.prototype.constructor = function Fake() {};
            Promise.prototype.then = function (ok) { if (typeof ok === "function") ok("forged"); return this; };
            Object.prototype.toJSON = function () { return { ok: true }; };
            String.prototype.slice = () => "";
            Object.defineProperty(Object.prototype, "ok", { get: () => true, set() {}, configurable: true });
          }
          await new Promise((r) => setTimeout(r, 1));
          if (event.step === 2) throw new Error("second run fails");
          this.db.set("step", event.step);`),
      );
      const inv = invocation(prepared);
      const outcomes = [];
      for (const step of [1, 2, 3]) outcomes.push(await runtime.invoke({ ...inv, event: { step } }));
      outcomes.forEach(assertWithinLimits);
      expect(outcomes.map((o) => [o.ok, o.warm, o.error?.message])).to.deep.equal([
        [true, false, undefined],
        [false, true, "second run fails"],
        [true, true, undefined],
      ]);
      expect(outcomes[2].db).to.deep.equal({ step: 3 });
    });
  });

  describe("limits cannot be bypassed", () => {
    it("this.db over 60 KB through many keys stops at the limit", async () => {
      const o = await run(
        source(`
          let refused = null;
          for (let i = 0; i < 100 && refused === null; i++) {
            try { this.db.set("k" + i, "x".repeat(1000)); } catch (e) { refused = { i, name: e.name, message: e.message }; }
          }
          this.$emit(refused);`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      const refused = o.emits[0].event as { i: number; name: string; message: string };
      expect(refused.name).to.equal("DbLimitError");
      expect(refused.message).to.match(
        /^this\.db\.set\("k\d+"\): the source's data would be \d+ bytes, over the limit of 61440 bytes \(60 KB\) per source$/,
      );
      expect(Object.keys(o.db)).to.have.length(refused.i);
    });

    it("this.db: a key over 1 KB, values nested 200 and 100,000 levels, and toJSON growth are refused", async () => {
      const o = await run(
        source(`
          const results = [];
          const attempts = [
            ["k".repeat(2000), 1],
            ["deep200", ${DEEP(200)}],
            ["deep100k", ${DEEP(100_000)}],
            ["grows", { toJSON() { return "y".repeat(70000); } }],
            ["fine", { small: true }],
          ];
          for (const [key, value] of attempts) {
            try { this.db.set(key, value); results.push("ok"); } catch (e) { results.push(e.name + ": " + e.message); }
          }
          this.$emit({ results });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      const results = (o.emits[0].event as { results: string[] }).results;
      expect(results[0]).to.equal(`DbLimitError: this.db.set("${"k".repeat(100)}…"): the key is 2000 bytes, over the limit of 1024 bytes`);
      expect(results[1]).to.equal('DbLimitError: this.db.set("deep200"): the value is nested deeper than 128 levels');
      expect(results[2]).to.equal('DbLimitError: this.db.set("deep100k"): the value is nested deeper than 128 levels');
      expect(results[3]).to.match(
        /^DbLimitError: this\.db\.set\("grows"\): the source's data would be 70007 bytes, over the limit of 61440 bytes/,
      );
      expect(results[4]).to.equal("ok");
      expect(o.db).to.deep.equal({ fine: { small: true } });
    });

    it("$emit nested 200 and 100,000 levels is refused; the host survives", async () => {
      const o = await run(
        source(`
          const results = [];
          for (const ev of [${DEEP(200)}, ${DEEP(100_000)}]) {
            try { this.$emit(ev); results.push("ok"); } catch (e) { results.push(e.name + ": " + e.message); }
          }
          this.$emit({ results });
          this.$emit(${DEEP(100_000)});`),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({
        name: "EmitError",
        code: "LIMIT_EXCEEDED",
        message: "$emit: the event is nested too deeply to serialize as JSON (the limit is 128 levels)",
      });
      expect(o.emits.map((e) => e.event)).to.deep.equal([
        {
          results: [
            "EmitError: $emit: the event is nested deeper than 128 levels",
            "EmitError: $emit: the event is nested too deeply to serialize as JSON (the limit is 128 levels)",
          ],
        },
      ]);
    });

    it("emits past the count limit are refused even when the component catches the error", async () => {
      const o = await run(
        source(`
          let refused = 0;
          for (let i = 0; i < 1100; i++) { try { this.$emit({ i }); } catch (e) { refused++; } }
          console.log("refused " + refused);`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.have.length(1000);
      expect(o.logs.map((l) => l.message)).to.deep.equal(["refused 100"]);
    });

    it("meta abuse: a long name or id and wrong types are refused, a huge summary is cut", async () => {
      const o = await run(
        source(`
          const results = [];
          for (const meta of [{ name: "n".repeat(201) }, { name: "$errors" }, { name: "$logs" }, { id: "i".repeat(1025) }, { id: { x: 1 } }, { ts: [1700000000000] }, { summary: "s".repeat(1e6), id: 7 }]) {
            try { this.$emit({ ok: 1 }, meta); results.push("ok"); } catch (e) { results.push(e.name + ": " + e.message); }
          }
          this.$emit({ results });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect((o.emits[1].event as { results: string[] }).results).to.deep.equal([
        "TypeError: $emit: meta.name is 201 characters, over the limit of 200",
        'TypeError: $emit: meta.name "$errors" is reserved for the platform\'s channel of that name',
        'TypeError: $emit: meta.name "$logs" is reserved for the platform\'s channel of that name',
        "TypeError: $emit: meta.id is 1025 characters, over the limit of 1024",
        "TypeError: $emit: meta.id must be a string or a number, got object",
        "TypeError: $emit: meta.ts must be an integer (epoch milliseconds), got an array",
        "ok",
      ]);
      expect(o.emits[0].meta).to.deep.equal({ id: 7, summary: "s".repeat(1024) });
    });

    it("a console flood of long lines is cut and truncated within the byte budget", async () => {
      const o = await run(
        source(
          `for (let i = 0; i < 5000; i++) console.error("z".repeat(20000)); for (let i = 0; i < 100000; i++) console.log(i); this.$emit({ done: true });`,
        ),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits).to.have.length(1);
      const last = o.logs[o.logs.length - 1];
      expect(last.level).to.equal("system");
      expect(last.message).to.match(/^\[log output truncated: \d+ more console line\(s\) dropped/);
      for (const line of o.logs.slice(0, -1)) expect(line.message.length).to.be.at.most(L.maxLogLineChars + 64);
    });

    it("a response body over 6 MB or nested too deeply is refused; emits are kept", async () => {
      const o = await run(
        source(`
          this.$emit({ before: true });
          const results = [];
          for (const body of ["b".repeat(7 * 1024 * 1024), new Uint8Array(7 * 1024 * 1024), ${DEEP(200)}, ${DEEP(100_000)}]) {
            try { this.http.respond({ status: 200, body }); results.push("ok"); } catch (e) { results.push(e.name + ": " + e.message); }
          }
          this.$emit({ results });
          this.http.respond({ status: 200, body: "c".repeat(7 * 1024 * 1024) });`),
        { http: { endpoint: "https://x.test/e", customResponse: true } },
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({
        name: "ResponseLimitError",
        code: "LIMIT_EXCEEDED",
        message: "http.respond: the body is 7340032 bytes, over the limit of 6291456 bytes",
      });
      expect(o.response).to.equal(undefined);
      expect(o.emits.map((e) => e.event)).to.deep.equal([
        { before: true },
        {
          results: [
            "ResponseLimitError: http.respond: the body is 7340032 bytes, over the limit of 6291456 bytes",
            "ResponseLimitError: http.respond: the body is 7340032 bytes, over the limit of 6291456 bytes",
            "ResponseLimitError: http.respond: the body is nested deeper than 128 levels",
            "ResponseLimitError: http.respond: the body is nested too deeply to serialize as JSON",
          ],
        },
      ]);
    });

    it("an action's huge or deep return value and exports fail the run with LIMIT_EXCEEDED", async () => {
      const cases: [string, RegExp][] = [
        [`return "r".repeat(600 * 1024);`, /^the return value is over the limit of 524288 bytes of JSON \(614402 characters\)$/],
        [`return "é".repeat(300 * 1024);`, /^the return value is 614402 bytes of JSON, over the limit of 524288 bytes$/],
        [`return ${DEEP(100_000)};`, /^the return value is nested too deeply or too large to serialize as JSON$/],
        [`return ${DEEP(200)};`, /^the return value is nested deeper than the limit: JSON nested deeper than 128 levels is not accepted$/],
        [`$.export("big", "e".repeat(600 * 1024)); return 1;`, /^the exports \(\$\.export\) is over the limit of 524288 bytes of JSON/],
        [
          `$.export("deep", ${DEEP(100_000)}); return 1;`,
          /^the exports \(\$\.export\) is nested too deeply or too large to serialize as JSON$/,
        ],
      ];
      for (const [body, message] of cases) {
        const o = await run(action(body));
        expect(o.ok, body).to.equal(false);
        expect(o.error?.code, body).to.equal("LIMIT_EXCEEDED");
        expect(o.error?.message, body).to.match(message);
        expect(o.returnValue).to.equal(undefined);
        expect(o.exports).to.equal(undefined);
      }
      const fine = await run(action(`$.export("__proto__", { x: 1 }); $.export("$summary", "done"); return ${DEEP(100, '"leaf"')};`));
      expect(fine.ok, JSON.stringify(fine.error)).to.equal(true);
      expect(jsonDepth(JSON.stringify(fine.returnValue))).to.equal(100);
      expect(JSON.stringify(fine.exports)).to.equal('{"__proto__":{"x":1},"$summary":"done"}');
    });
  });

  describe("hangs and bombs", () => {
    it("a timer storm is cut off by the timeout; the source's next run starts clean", async () => {
      const prepared = await prepareCode(
        runtime,
        source(`
          if (event.storm) { for (let i = 0; i < 10000; i++) setInterval(() => { globalThis.ticks = (globalThis.ticks ?? 0) + 1; }, 0); await new Promise(() => {}); }
          this.$emit({ ticks: globalThis.ticks ?? 0 });`),
      );
      const inv = invocation(prepared, { limits: { timeoutMs: 800 } });
      const o = await runtime.invoke({ ...inv, event: { storm: true } });
      assertWithinLimits(o);
      expect(o.error).to.include({ name: "TimeoutError", code: "TIMEOUT" });
      const next = await runtime.invoke({ ...inv, event: {} });
      expect(next).to.deep.include({ ok: true, warm: false });
      expect(next.emits).to.deep.equal([{ event: { ticks: 0 }, meta: {} }]);
    });

    it("an endless microtask chain is cut off by the timeout", async () => {
      const o = await run(source(`const loop = () => { Promise.resolve().then(loop); }; loop(); await new Promise(() => {});`), {
        limits: { timeoutMs: 800 },
      });
      expect(o.ok).to.equal(false);
      // The chain holds nothing, so it is the clock (not memory) that stops it.
      expect(o.error).to.include({ name: "TimeoutError", code: "TIMEOUT" });
    });

    it("a memory bomb inside toJSON while the platform serializes an emit is a memory-limit failure", async () => {
      const o = await run(
        source(
          `this.$emit({ first: 1 }); this.$emit({ toJSON() { const a = []; for (;;) a.push(new Array(1e5).fill(Math.random())); } });`,
        ),
      );
      expect(o.ok).to.equal(false);
      expect(o.error).to.include({ name: "MemoryLimitError", code: "MEMORY_LIMIT" });
      expect(o.emits).to.deep.equal([{ event: { first: 1 }, meta: {} }]);
    });
  });

  describe("escape attempts", () => {
    it("fn.caller and CallSite.getFunction reach no platform function", async () => {
      const o = await run(
        source(
          `
          const chains = [];
          // Sloppy-mode probes: only those have a readable .caller. Each walks the caller chain
          // as far as it goes and names what it finds.
          const probe = Function("chains", "return function probe() { const chain = []; let f = probe.caller; while (f) { chain.push(f.name || '(anonymous)'); try { f = f.caller; } catch (e) { break; } } chains.push(chain); return null; }")(chains);
          const frames = [];
          Error.prepareStackTrace = (e, sites) => sites;
          const collect = Function("frames", "return function collect() { for (const s of new Error().stack) frames.push([String(s.getFileName()), typeof s.getFunction(), typeof s.getThis()]); return null; }")(frames);
          const sloppyCallback = Function("probe", "collect", "return function sloppyCallback() { probe(); collect(); }")(probe, collect);
          await new Promise((r) => setTimeout(() => { sloppyCallback(); r(); }, 1));
          this.$emit({ toJSON: probe });
          this.$emit({ toJSON: collect });
          this.viaMethod(sloppyCallback);
          this.$emit({ chains, prelude: frames.filter(([file]) => file.startsWith("headwater:")), files: [...new Set(frames.map(([f]) => f))].sort() });`,
          `methods: { viaMethod: Function("cb", "return cb()") },`,
        ),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      const ev = o.emits[o.emits.length - 1].event as { chains: string[][]; prelude: string[][]; files: string[] };
      // Only the component's own sloppy functions show up; the chain ends at the first strict
      // (platform) caller, whose identity is never handed out.
      expect(ev.chains).to.deep.equal([["sloppyCallback", "(anonymous)"], [], ["sloppyCallback", "anonymous"]]);
      expect(ev.files).to.include("headwater:prelude.js");
      expect(ev.prelude.length).to.be.greaterThan(0);
      for (const [, fn, self] of ev.prelude) expect([fn, self]).to.deep.equal(["undefined", "undefined"]);
    });

    it("globalThis holds no bridge function, and every constructor route to process reaches only the sandbox's", async () => {
      const o = await run(
        source(`
          const names = Object.getOwnPropertyNames(globalThis);
          const routes = {
            fn: () => Function("return typeof process.dlopen + ':' + process.pid")(),
            async: () => (async () => {}).constructor("return typeof process")(),
            gen: () => (function* () {}).constructor("return Object.keys(process.env).join()")().next().value,
            emit: () => this.$emit.constructor("return process.binding('fs')")(),
            dbSet: () => this.db.set.constructor("return typeof require")(),
            respond: () => this.http.respond.constructor("return typeof __hw_bridge_db")(),
            timer: () => setTimeout.constructor("return typeof __hw_entry")(),
          };
          const out = {};
          for (const [k, f] of Object.entries(routes)) { try { const v = f(); out[k] = v instanceof Promise ? "promise" : v; } catch (e) { out[k] = e.name; } }
          this.$emit({
            bridge: names.filter((n) => /^__hw_(bridge|entry|define)/.test(n)),
            modulesFrozen: Object.isFrozen(globalThis.__hw_modules),
            out,
            hostLike: names.filter((n) => ["process", "require", "module", "ivm", "_ivm", "Deno", "Bun", "WebAssembly"].includes(n)),
          });`),
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.emits[0].event).to.deep.equal({
        bridge: [],
        modulesFrozen: true,
        out: {
          fn: "function:1",
          async: "promise",
          gen: "PD_COMPONENT,NODE_ENV,TMPDIR",
          emit: "Error",
          dbSet: "undefined",
          respond: "undefined",
          timer: "undefined",
        },
        // The sandbox's own process object; the host's is nowhere.
        hostLike: ["process"],
      });
    });
  });

  describe("http.respond validation", () => {
    const http = { endpoint: "https://x.test/e", customResponse: true };

    it("refuses header injection, invalid names, 1xx statuses; accepts what real components send", async () => {
      const o = await run(
        source(`
          const results = [];
          const attempts = [
            { status: 200, headers: { "x-a": "one\\r\\nSet-Cookie: stolen=1" } },
            { status: 200, headers: { "x-a": "nul\\u0000" } },
            { status: 200, headers: { "bad name": "v" } },
            { status: 200, headers: { "x:y": "v" } },
            { status: 200, headers: { "x-o": { nested: true } } },
            { status: 200, headers: Object.fromEntries(Array.from({ length: 101 }, (_, i) => ["x-" + i, "v"])) },
            { status: 200, headers: { "x-big": "v".repeat(8193) } },
            { status: 101, headers: { upgrade: "websocket" } },
            { status: 100 },
            { status: 200.5 },
            { status: "abc" },
            { status: 600 },
            { status: "201", headers: { "X-Num": 7, "X-Bool": true, "X-List": ["a", 1], "X-Skip": null }, body: { hello: "world" } },
          ];
          for (const r of attempts) { try { this.http.respond(r); results.push("ok"); } catch (e) { results.push(e.name + ": " + e.message); } }
          this.$emit({ results });`),
        { http },
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect((o.emits[0].event as { results: string[] }).results).to.deep.equal([
        'TypeError: http.respond: the value of header "x-a" contains CR, LF or NUL',
        'TypeError: http.respond: the value of header "x-a" contains CR, LF or NUL',
        'TypeError: http.respond: "bad name" is not a valid header name',
        'TypeError: http.respond: "x:y" is not a valid header name',
        'TypeError: http.respond: the value of header "x-o" must be a string, number or boolean (or an array of them), got an object',
        "TypeError: http.respond: at most 100 headers may be set",
        'TypeError: http.respond: the value of header "x-big" is over 8192 bytes',
        "RangeError: http.respond: status 101 is informational (1xx) and cannot be the final response; use 200 to 599",
        "RangeError: http.respond: status 100 is informational (1xx) and cannot be the final response; use 200 to 599",
        "RangeError: http.respond: status must be an integer (or a string of digits) from 200 to 599, got 200.5",
        'RangeError: http.respond: status must be an integer (or a string of digits) from 200 to 599, got "abc"',
        "RangeError: http.respond: status must be from 200 to 599, got 600",
        "ok",
      ]);
      expect(o.response).to.deep.equal({
        status: 201,
        headers: { "x-num": "7", "x-bool": "true", "x-list": ["a", "1"], "content-type": "application/json; charset=utf-8" },
        body: '{"hello":"world"}',
      });
    });

    it("a response without status is 200; without status, Node's statusCode is read (published Salesforce sources send it)", async () => {
      const answer = async (response: string) => {
        const o = await run(source(`this.http.respond(${response}); this.$emit({ after: true });`), { http });
        expect(o.ok, JSON.stringify(o.error)).to.equal(true);
        expect(o.emits, "the run went on").to.have.length(1);
        return o.response?.status;
      };
      expect(await answer("{ statusCode: 202 }")).to.equal(202);
      expect(await answer('{ body: "ok" }')).to.equal(200);
      expect(await answer("{ status: 201, statusCode: 202 }")).to.equal(201);
    });

    it("without customResponse an invalid respond never throws: a warning, the run and its emits go on", async () => {
      const o = await run(
        `export default { name: "plain", version: "1", props: { http: "$.interface.http" }, async run() {
          this.http.respond({ status: 200, headers: { "x-a": "a\\nb" } });
          this.http.respond({ status: 101 });
          this.http.respond({ status: 200, body: "b".repeat(7 * 1024 * 1024) });
          this.$emit({ after: true });
        } };`,
        { http: { endpoint: "https://x.test/e", customResponse: false } },
      );
      expect(o.ok, JSON.stringify(o.error)).to.equal(true);
      expect(o.response).to.equal(undefined);
      expect(o.emits).to.deep.equal([{ event: { after: true }, meta: {} }]);
      expect(o.logs.map((l) => [l.level, l.message])).to.deep.equal([
        ["warn", 'http.respond was ignored: http.respond: the value of header "x-a" contains CR, LF or NUL'],
        [
          "warn",
          "http.respond was ignored: http.respond: status 101 is informational (1xx) and cannot be the final response; use 200 to 599",
        ],
        ["warn", "http.respond was ignored: http.respond: the body is 7340032 bytes, over the limit of 6291456 bytes"],
      ]);
    });
  });
});

describe("runtime: the process boundary (defence in depth)", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  let prepared: PreparedComponent;

  before(async () => {
    // The real worker behind a wrapper that rewrites results of sources named dc_tamper_<mode>_….
    runtime = await startRuntime({ workers: 1, workerPath: fileURLToPath(new URL("./tamperingWorker.js", import.meta.url)) });
    prepared = await prepareCode(
      runtime,
      `export default { name: "t", version: "1", props: { db: "$.service.db" }, async run(e) { this.db.set("n", e.n ?? 0); this.$emit({ n: e.n ?? 0 }); } };`,
    );
  });
  after(async () => runtime.close());

  const at = async (sourceId: string, event: unknown = {}) => {
    const o = await runtime.invoke(invocation(prepared, { sourceId, event }));
    assertWithinLimits(o);
    return o;
  };

  it("malformed or lying results from a child fail that invocation with SANDBOX_PROTOCOL; the child keeps serving", async () => {
    const [pid] = runtime.pids();
    for (const mode of ["garbage", "deep", "badcode"]) {
      const o = await at(`dc_tamper_${mode}_1`);
      expect(o.ok, mode).to.equal(false);
      expect(o.error?.code, mode).to.equal("SANDBOX_PROTOCOL");
      expect(o.error?.message, mode).to.match(/^the runner process sent a malformed message \(.+\); the invocation was aborted$/);
      expect(o.dbChanged).to.equal(false);
    }
    // Three bad messages within a minute: the child was replaced.
    await runtime.ready();
    const fine = await at("dc_plain", { n: 4 });
    expect(fine).to.deep.include({ ok: true, db: { n: 4 } });
    expect(runtime.pids()[0]).to.not.equal(pid);
  });

  it("the host re-checks sizes and depth of what a child sends", async () => {
    const big = await at("dc_tamper_bigemit_1");
    expect(big.error?.message).to.match(/an emitted event is \d+ bytes, over the limit of 524288/);
    // The emit before the bad one passed the checks and is kept, as after any failure.
    expect(big.emits).to.deep.equal([{ event: { ok: 1 }, meta: {} }]);
    const deep = await at("dc_tamper_deepemit_1");
    expect(deep.error?.message).to.match(/an emitted event: JSON nested deeper than 128 levels is not accepted/);
    expect(deep.emits).to.deep.equal([]);
    await runtime.ready();
    const db = await at("dc_tamper_bigdb_1");
    expect(db.error?.message).to.match(/the db snapshot is 70003 bytes, over the limit of 61440/);
    expect(db).to.deep.include({ dbChanged: false, db: {} });
    await runtime.ready();
    expect((await at("dc_plain2", { n: 1 })).ok).to.equal(true);
  });

  it("the host re-checks the sends a child reports: shape (a header injected in a subject) and count", async () => {
    await runtime.ready();
    const forged = await at("dc_tamper_badsend_1");
    expect(forged.error?.code).to.equal("SANDBOX_PROTOCOL");
    expect(forged.error?.message).to.match(/a send: \$\.send\.email: subject contains CR, LF or NUL/);
    expect(forged.sends, "the valid send before the bad one is kept, as emits are").to.deep.equal([{ kind: "email", subject: "fine" }]);
    await runtime.ready();
    const many = await at("dc_tamper_manysends_1");
    expect(many.error?.code).to.equal("SANDBOX_PROTOCOL");
    expect(many.error?.message).to.match(/sends must be at most 16 strings of JSON text/);
    expect(many.sends).to.equal(undefined);
    await runtime.ready();
  });

  it("a malformed message inside a child's many counts as bad; the messages beside it are still handled", async () => {
    const o = await at("dc_tamper_inmany_1", { n: 3 });
    expect(o).to.deep.include({ ok: true, db: { n: 3 } });
    expect(o.emits).to.deep.equal([{ event: { n: 3 }, meta: {} }]);
    await runtime.ready();
  });

  it("a child that keeps sending garbage is killed and replaced", async () => {
    const [pid] = runtime.pids();
    const o = await at("dc_tamper_nonsense_1");
    expect(o.ok).to.equal(false);
    expect(o.error?.code).to.equal("SANDBOX_PROTOCOL");
    await runtime.ready();
    expect(runtime.pids()[0]).to.be.a("number").and.not.equal(pid);
    const next = await at("dc_after_nonsense", { n: 2 });
    expect(next).to.deep.include({ ok: true, db: { n: 2 } });
  });

  it("a runner child answers a malformed message from its host with SANDBOX_PROTOCOL and keeps serving", async () => {
    const child = fork(fileURLToPath(new URL("../../src/runtime/sandbox/worker.js", import.meta.url)), [], {
      execArgv: ["--no-node-snapshot"],
      env: {},
      serialization: "json",
      stdio: ["ignore", "ignore", "ignore", "ipc"],
    });
    try {
      const replies: Record<string, unknown>[] = [];
      // What the child sends in one turn comes in one `many` (turnBatch.ts).
      child.on("message", (m: unknown) => replies.push(...(messagesOf(m) as Record<string, unknown>[])));
      const next = async (type: string) => {
        for (let i = 0; i < 200; i++) {
          const found = replies.findIndex((m) => m["type"] === type);
          if (found >= 0) return replies.splice(found, 1)[0];
          await new Promise((r) => setTimeout(r, 25));
        }
        throw new Error(`no ${type} message`);
      };
      child.send({
        type: "init",
        prelude: await preludeSource(),
        limits: L,
        allowPrivateNetworks: false,
        maxWarmIsolates: 4,
        maxWarmContexts: 4,
      });
      await next("ready");
      child.send({
        type: "invoke",
        id: 7,
        ownerId: "u",
        sourceId: "s",
        bundleKey: "b",
        method: "explode",
        payload: "{}",
        db: "{}",
        timeoutMs: 1000,
        memoryMb: 64,
      });
      const answer = await next("result");
      expect(answer["id"]).to.equal(7);
      expect((answer["outcome"] as InvocationOutcome).error).to.deep.include({
        code: "SANDBOX_PROTOCOL",
        message: "the runner process received a malformed message: unknown method",
      });
      child.send({ type: { deep: true } });
      child.send({ type: "invoke", id: 8, payload: { not: "text" } });
      child.send({ type: "ping", seq: 1 });
      expect(await next("pong")).to.deep.equal({ type: "pong", seq: 1 });
      expect(replies.filter((m) => m["type"] === "result").map((m) => m["id"])).to.deep.equal([8]);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
