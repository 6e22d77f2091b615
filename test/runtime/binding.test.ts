// Instance binding as the component format promises: props, methods, app props, this.db,
// http.respond, $emit, console capture, hooks, actions, warm contexts and tenancy.
import { expect } from "chai";
import type { HttpResponse, LogLine, Runtime } from "../../src/runtime/index.js";
import { DEFAULT_LIMITS } from "../../src/runtime/index.js";
import { InvocationRecord, IsolateSlot, takeReusableSlot } from "../../src/runtime/sandbox/isolateSlot.js";
import { readRunResult } from "../../src/runtime/sandbox/isolateResults.js";
import { preludeSource } from "../../src/runtime/sandbox/preludeBundle.js";
import { invocation, prepareCode, prepareFixture, startRuntime } from "./support.js";

describe("runtime: instance binding", function () {
  this.timeout(30_000);
  let runtime: Runtime;
  before(async () => {
    runtime = await startRuntime();
  });
  after(async () => runtime.close());

  it("binds configured values, defaults, app props with $auth and methods, http and timer", async () => {
    const prepared = await prepareFixture(runtime, "valid/all-prop-types.source.mjs");
    const outcome = await runtime.invoke(
      invocation(prepared, {
        props: {
          weather: { $auth: { region: "eu", api_key: "k-123" } },
          token: "s3cret",
          tags: ["a", "b"],
          city: "Lima",
          timer: { intervalSeconds: 60 },
        },
        event: { hello: 1 },
        http: { endpoint: "https://hooks.example.test/dc_1", customResponse: true },
      }),
    );
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.emits).to.deep.equal([
      {
        event: {
          event: { hello: 1 },
          enabled: true,
          limit: 10,
          token: "s3cret",
          unit: "C",
          tags: ["a", "b"],
          city: "Lima",
          endpoint: "https://hooks.example.test/dc_1",
          timer: { intervalSeconds: 60 },
          baseUrl: "https://api.example.test/eu",
          auth: "Bearer k-123",
        },
        meta: { id: "1", summary: "all props" },
      },
    ]);
  });

  it("exposes the app's propDefinitions and binds app methods to the app", async () => {
    const prepared = await prepareCode(
      runtime,
      `const app = { type: "app", app: "demo", propDefinitions: { q: { type: "string", label: "Query" } },
         methods: { url() { return this.base() + "/" + this.$auth.user; }, base() { return "https://demo.test"; } } };
       export default { name: "app", version: "1", props: { app }, async run() {
         const { url } = this.app;
         this.$emit({ defs: Object.keys(this.app.propDefinitions), label: this.app.propDefinitions.q.label, url: url(), slug: this.app.app });
       } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared, { props: { app: { $auth: { user: "ada" } } } }));
    expect(outcome.emits[0]?.event).to.deep.equal({ defs: ["q"], label: "Query", url: "https://demo.test/ada", slug: "demo" });
  });

  it("makes methods callable as this.<method>() and from each other, and runs hooks", async () => {
    const prepared = await prepareFixture(runtime, "valid/methods-hooks.source.mjs");
    const base = invocation(prepared);
    const deployed = await runtime.invoke({ ...base, method: "deploy" });
    expect(deployed.ok).to.equal(true);
    expect(deployed.dbChanged).to.equal(true);
    expect(deployed.db).to.deep.equal({ deployed: true, counter: 100 });
    const activated = await runtime.invoke({ ...base, method: "activate", db: deployed.db });
    expect(activated.db).to.deep.equal({ deployed: true, counter: 100, active: true });
    const run1 = await runtime.invoke({ ...base, db: activated.db });
    const run2 = await runtime.invoke({ ...base, db: run1.db, props: { step: 5 } });
    expect(run1.emits).to.deep.equal([{ event: { n: 102 }, meta: { id: 102, ts: 1700000000102 } }]);
    expect(run2.emits).to.deep.equal([{ event: { n: 107 }, meta: { id: 107, ts: 1700000000107 } }]);
    const deactivated = await runtime.invoke({ ...base, method: "deactivate", db: run2.db });
    expect(deactivated.db).to.include({ active: false, counter: 107 });
  });

  it("treats a missing hook as a no-op", async () => {
    const prepared = await prepareCode(runtime, `export default { name: "n", version: "1", async run() {} };`);
    const outcome = await runtime.invoke(invocation(prepared, { method: "deploy" }));
    expect(outcome).to.include({ ok: true, dbChanged: false });
    expect(outcome.emits).to.deep.equal([]);
  });

  describe("this.db", () => {
    const code = `export default { name: "db", version: "1", props: { db: "$.service.db" }, async run(event) {
      const out = {};
      try { this.db.set(event.key, event.value === "FN" ? () => 1 : event.value === "BIG" ? 10n : event.value === "NAN" ? NaN : event.value); out.ok = true; }
      catch (e) { out.error = e.name + ": " + e.message; }
      out.read = this.db.get(event.key);
      out.missing = this.db.get("nope") === undefined;
      this.$emit(out);
    } };`;

    it("stores JSON values, returns copies, undefined for a missing key", async () => {
      const prepared = await prepareCode(runtime, code);
      const outcome = await runtime.invoke(invocation(prepared, { event: { key: "k", value: { a: [1, "x", null] } }, db: { old: 1 } }));
      expect(outcome.emits[0]?.event).to.deep.equal({ ok: true, read: { a: [1, "x", null] }, missing: true });
      expect(outcome.db).to.deep.equal({ old: 1, k: { a: [1, "x", null] } });
      expect(outcome.dbChanged).to.equal(true);
    });

    it("refuses values that are not JSON-serializable with a clear error", async () => {
      const prepared = await prepareCode(runtime, code);
      for (const [value, pattern] of [
        ["FN", /TypeError: this\.db\.set\("k"\): the value is a function, which is not JSON-serializable/],
        ["BIG", /the value is a bigint/],
        ["NAN", /the value is NaN/],
      ] as const) {
        const outcome = await runtime.invoke(invocation(prepared, { event: { key: "k", value } }));
        expect(outcome.emits[0]?.event).to.have.property("error").that.matches(pattern);
        expect(outcome.dbChanged).to.equal(false);
        expect(outcome.db).to.deep.equal({});
      }
    });

    it("enforces 60 KB per source, counting what is already stored", async () => {
      const prepared = await prepareCode(runtime, code);
      const fits = await runtime.invoke(invocation(prepared, { event: { key: "k", value: "x".repeat(60 * 1024 - 10) } }));
      expect(fits.emits[0]?.event).to.include({ ok: true });
      const over = await runtime.invoke(invocation(prepared, { event: { key: "k2", value: "x".repeat(100) }, db: fits.db }));
      expect((over.emits[0]?.event as { error: string }).error).to.match(
        /^DbLimitError: this\.db\.set\("k2"\): the source's data would be \d+ bytes, over the limit of 61440 bytes \(60 KB\) per source$/,
      );
      expect(over.dbChanged).to.equal(false);
      // Replacing a key frees its old size first.
      const replace = await runtime.invoke(invocation(prepared, { event: { key: "k", value: "small" }, db: fits.db }));
      expect(replace.db).to.deep.equal({ k: "small" });
    });

    it("fails the run when an uncaught db error escapes", async () => {
      const prepared = await prepareCode(
        runtime,
        `export default { name: "d", version: "1", props: { db: "$.service.db" }, async run() { this.db.set("x", "y".repeat(70000)); } };`,
      );
      const outcome = await runtime.invoke(invocation(prepared));
      expect(outcome.ok).to.equal(false);
      expect(outcome.error).to.include({ name: "DbLimitError", code: "LIMIT_EXCEEDED" });
    });
  });

  describe("http", () => {
    it("delivers respond() early through onRespond; the first respond wins", async () => {
      const prepared = await prepareCode(
        runtime,
        `export default { name: "h", version: "1", props: { http: { type: "$.interface.http", customResponse: true } }, async run(event) {
          this.http.respond({ status: 201, headers: { "X-Id": 7 }, body: { got: event.body } });
          this.http.respond({ status: 500, body: "second" });
          await new Promise((r) => setTimeout(r, 300));
          this.$emit({ after: true });
        } };`,
      );
      let early: { response: HttpResponse; at: number } | undefined;
      const started = Date.now();
      const outcome = await runtime.invoke(
        invocation(prepared, {
          event: { method: "POST", path: "/", query: {}, headers: {}, bodyRaw: '{"a":1}', body: { a: 1 } },
          http: { endpoint: "https://x.test/e", customResponse: true },
        }),
        { onRespond: (response) => (early = { response, at: Date.now() }) },
      );
      const expected = {
        status: 201,
        headers: { "x-id": "7", "content-type": "application/json; charset=utf-8" },
        body: '{"got":{"a":1}}',
      };
      expect(outcome.response).to.deep.equal(expected);
      expect(early?.response).to.deep.equal(expected);
      // Delivered before the run's 300 ms sleep ended.
      expect(early!.at - started).to.be.lessThan(outcome.wallMs);
      expect(outcome.emits).to.deep.equal([{ event: { after: true }, meta: {} }]);
    });

    it("marks binary bodies as base64; an invalid respond throws with customResponse, else only warns", async () => {
      const code = (
        custom: boolean,
      ) => `export default { name: "h", version: "1", props: { http: { type: "$.interface.http", customResponse: ${custom} } }, async run(event) {
          this.http.respond({ status: event.status, body: Buffer.from([0, 1, 2, 255]) });
          this.$emit({ responded: event.status });
        } };`;
      const custom = await prepareCode(runtime, code(true));
      const good = await runtime.invoke(invocation(custom, { event: { status: 200 } }));
      expect(good.response).to.deep.equal({ status: 200, headers: {}, body: { base64: "AAEC/w==" } });
      const bad = await runtime.invoke(invocation(custom, { event: { status: 600 } }));
      expect(bad.ok).to.equal(false);
      expect(bad.error).to.include({
        name: "RangeError",
        message: "http.respond: status must be from 200 to 599, got 600",
        code: "USER_ERROR",
      });
      expect(bad.response).to.equal(undefined);
      expect(bad.emits).to.deep.equal([]);
      // Without customResponse the request was answered when it was queued: the run goes on.
      const plain = await prepareCode(runtime, code(false));
      const warned = await runtime.invoke(invocation(plain, { event: { status: 600 } }));
      expect(warned.ok, JSON.stringify(warned.error)).to.equal(true);
      expect(warned.response).to.equal(undefined);
      expect(warned.emits).to.deep.equal([{ event: { responded: 600 }, meta: {} }]);
      expect(warned.logs.map((l) => [l.level, l.message])).to.deep.equal([
        ["warn", "http.respond was ignored: http.respond: status must be from 200 to 599, got 600"],
      ]);
    });
  });

  describe("$emit", () => {
    const code = `export default { name: "e", version: "1", async run(event) {
      const results = [];
      for (const [ev, meta] of event.calls) {
        try { this.$emit(ev === "BIG" ? { blob: "x".repeat(600 * 1024) } : ev, meta); results.push("ok"); }
        catch (e) { results.push(e.name + ": " + e.message); }
      }
      this.$emit({ results });
    } };`;

    it("passes id, name, summary, ts through and validates their types", async () => {
      const prepared = await prepareCode(runtime, code);
      const outcome = await runtime.invoke(
        invocation(prepared, {
          event: {
            calls: [
              [{ a: 1 }, { id: "x1", name: "chan", summary: "s", ts: 1700000000000, other: "dropped" }],
              [{ a: 2 }, { id: 3 }],
              [{ a: 3 }, { id: { no: 1 } }],
              [{ a: 4 }, { ts: 1.5 }],
              [{ a: 5 }, "meta"],
              ["BIG", {}],
            ],
          },
        }),
      );
      expect(outcome.emits.slice(0, 2)).to.deep.equal([
        { event: { a: 1 }, meta: { id: "x1", name: "chan", summary: "s", ts: 1700000000000 } },
        { event: { a: 2 }, meta: { id: 3 } },
      ]);
      expect((outcome.emits[2]?.event as { results: string[] }).results).to.deep.equal([
        "ok",
        "ok",
        "TypeError: $emit: meta.id must be a string or a number, got object",
        "TypeError: $emit: meta.ts must be an integer (epoch milliseconds), got 1.5",
        "TypeError: $emit: the second argument (meta) must be an object with id, name, summary, ts",
        `EmitError: $emit: the event is ${JSON.stringify({ blob: "x".repeat(600 * 1024) }).length} bytes of JSON, over the limit of 524288 bytes per event`,
      ]);
    });

    it("caps the number of emits per invocation", async () => {
      const prepared = await prepareCode(
        runtime,
        `export default { name: "e", version: "1", async run() { for (let i = 0; i < 1005; i++) this.$emit({ i }); } };`,
      );
      const outcome = await runtime.invoke(invocation(prepared));
      expect(outcome.ok).to.equal(false);
      expect(outcome.error?.message).to.equal("$emit: at most 1000 events may be emitted per invocation");
      expect(outcome.emits).to.have.length(1000);
    });
  });

  it("captures console output with levels, streamed through onLog", async () => {
    const prepared = await prepareCode(
      runtime,
      `export default { name: "c", version: "1", async run() {
        console.log("hello %s", "world", { n: 1 });
        console.warn("careful");
        console.error(new Error("boom").message);
        console.info([1, 2]);
        console.debug("dbg");
      } };`,
    );
    const streamed: LogLine[] = [];
    const outcome = await runtime.invoke(invocation(prepared), { onLog: (l) => streamed.push(l) });
    expect(outcome.logs.map((l) => [l.level, l.message])).to.deep.equal([
      ["log", "hello world { n: 1 }"],
      ["warn", "careful"],
      ["error", "boom"],
      ["info", "[ 1, 2 ]"],
      ["debug", "dbg"],
    ]);
    expect(streamed).to.deep.equal(outcome.logs);
  });

  it("runs actions with { $, steps }: exports, return value, flow.exit", async () => {
    const prepared = await prepareFixture(runtime, "valid/all-prop-types.action.mjs");
    const outcome = await runtime.invoke(
      invocation(prepared, {
        props: { notes: { $auth: { base_url: "https://notes.test" } }, folder: "inbox", payload: [1, { two: 2 }], count: 3 },
        steps: { trigger: { event: { id: "evt" } } },
      }),
    );
    expect(outcome.ok).to.equal(true);
    expect(outcome.exports).to.deep.equal({ $summary: "Created 3 note(s) in inbox", url: "https://notes.test/folders/inbox" });
    expect(outcome.returnValue).to.deep.equal({ payload: [1, { two: 2 }], fromSteps: { id: "evt" } });
    const exit = await prepareCode(
      runtime,
      `export default { name: "x", version: "1", type: "action", async run({ $ }) { $.flow.exit("nothing to do"); return 1; } };`,
    );
    const exited = await runtime.invoke(invocation(exit));
    expect(exited).to.deep.include({ ok: true, exited: { reason: "nothing to do" } });
    expect(exited.returnValue).to.equal(undefined);
  });

  it("keeps globals warm per source, never across sources or owners", async () => {
    const prepared = await prepareCode(
      runtime,
      `let calls = 0; globalThis.seen = globalThis.seen ?? [];
       export default { name: "w", version: "1", async run(event) { calls++; seen.push(event.who); this.$emit({ calls, seen }); } };`,
    );
    const a = invocation(prepared, { ownerId: "u_a", sourceId: "dc_same" });
    const first = await runtime.invoke({ ...a, event: { who: "a1" } });
    const second = await runtime.invoke({ ...a, event: { who: "a2" } });
    expect(first.warm).to.equal(false);
    expect(second.warm).to.equal(true);
    expect(second.emits[0]?.event).to.deep.equal({ calls: 2, seen: ["a1", "a2"] });
    // Same source id under another owner: a separate isolate.
    const other = await runtime.invoke({ ...a, ownerId: "u_b", event: { who: "b1" } });
    expect(other.emits[0]?.event).to.deep.equal({ calls: 1, seen: ["b1"] });
    const otherSource = await runtime.invoke({ ...a, sourceId: "dc_other", event: { who: "c1" } });
    expect(otherSource.emits[0]?.event).to.deep.equal({ calls: 1, seen: ["c1"] });
    // A new component version for the same source starts clean.
    const v2 = await prepareCode(
      runtime,
      `let calls = 100; export default { name: "w", version: "2", async run() { calls++; this.$emit({ calls }); } };`,
    );
    const upgraded = await runtime.invoke(invocation(v2, { ownerId: "u_a", sourceId: "dc_same" }));
    expect(upgraded.emits[0]?.event).to.deep.equal({ calls: 101 });
  });

  it("runs invocations of one source one after the other, other sources alongside", async () => {
    const prepared = await prepareCode(
      runtime,
      `let running = 0; export default { name: "s", version: "1", async run(e) {
         running++; const overlap = running > 1; await new Promise((r) => setTimeout(r, 150)); running--;
         this.$emit({ n: e.n, overlap, at: Date.now() });
       } };`,
    );
    const inv = invocation(prepared);
    const [a, b, c] = await Promise.all([
      runtime.invoke({ ...inv, event: { n: 1 } }),
      runtime.invoke({ ...inv, event: { n: 2 } }),
      runtime.invoke({ ...inv, sourceId: "dc_elsewhere", event: { n: 3 } }),
    ]);
    const ev = (o: typeof a) => o.emits[0].event as { n: number; overlap: boolean; at: number };
    expect([ev(a).overlap, ev(b).overlap, ev(c).overlap]).to.deep.equal([false, false, false]);
    expect(ev(b).at - ev(a).at).to.be.greaterThanOrEqual(140);
    expect(Math.abs(ev(c).at - ev(a).at)).to.be.lessThan(140);
  });

  it("rejects work after close()", async () => {
    const short = await startRuntime({ workers: 1 });
    const prepared = await prepareCode(short, `export default { name: "c", version: "1", async run() {} };`);
    await short.close();
    const err = await short.invoke(invocation(prepared)).catch((e: unknown) => e);
    expect((err as Error).name).to.equal("RuntimeClosedError");
  });

  it("bounds warm isolates with an LRU per runner process", async () => {
    const small = await startRuntime({ workers: 1, maxWarmIsolates: 2 });
    try {
      const prepared = await prepareCode(small, `export default { name: "l", version: "1", async run() {} };`);
      const at = (sourceId: string) => small.invoke(invocation(prepared, { sourceId }));
      expect((await at("dc_1")).warm).to.equal(false);
      expect((await at("dc_2")).warm).to.equal(false);
      expect((await at("dc_1")).warm).to.equal(true);
      expect((await at("dc_3")).warm).to.equal(false); // evicts dc_2, the least recently used
      expect((await at("dc_1")).warm).to.equal(true);
      expect((await at("dc_2")).warm).to.equal(false);
    } finally {
      await small.close();
    }
  });

  it("a cold source in a full runner gets a fresh context, never another source's globals or module state", async () => {
    // One warm isolate: each source's run below is a cold start taking over the other's isolate.
    const one = await startRuntime({ workers: 1, maxWarmIsolates: 1 });
    try {
      const prepared = await prepareCode(
        one,
        `let calls = 0; export default { name: "r", version: "1", async run(event) {
           calls++; const before = globalThis.mark ?? null; const inherited = ({}).polluted ?? null;
           globalThis.mark = event.who; Object.prototype.polluted = event.who;
           this.$emit({ calls, before, inherited }); } };`,
      );
      for (const who of ["a", "b", "a", "b"]) {
        const outcome = await one.invoke(invocation(prepared, { ownerId: "u_same", sourceId: `dc_${who}`, event: { who } }));
        expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
        expect(outcome.warm).to.equal(false);
        expect(outcome.emits[0]?.event).to.deep.equal({ calls: 1, before: null, inherited: null });
      }
    } finally {
      await one.close();
    }
  });

  it("takeOver: the same isolate, a fresh context; the slot taken over is finished", async () => {
    const prepared = await prepareCode(
      runtime,
      `let calls = 0; export default { name: "t", version: "1", async run() { calls++; this.$emit({ calls, mark: globalThis.mark ?? null }); globalThis.mark = "left behind"; } };`,
    );
    const env = { limits: DEFAULT_LIMITS, allowPrivateNetworks: false, prelude: await preludeSource() };
    const payload = JSON.stringify({ method: "run", props: {}, event: {}, limits: DEFAULT_LIMITS });
    const run = async (slot: IsolateSlot) => {
      const rec = new InvocationRecord(
        1,
        Date.now() + 5000,
        "{}",
        DEFAULT_LIMITS.maxDbBytes,
        () => {},
        () => {},
      );
      slot.current = rec;
      try {
        const result = readRunResult(await slot.invoke(payload, "{}"), DEFAULT_LIMITS);
        expect(result.ok, JSON.stringify(result.error)).to.equal(true);
        return JSON.parse(rec.emits[0].event) as unknown;
      } finally {
        slot.endInvocation();
      }
    };
    const first = new IsolateSlot("u_1\u0000dc_1", prepared.bundleHash, 64, env);
    const init = async (slot: IsolateSlot) => {
      slot.current = new InvocationRecord(
        0,
        Date.now() + 5000,
        "{}",
        DEFAULT_LIMITS.maxDbBytes,
        () => {},
        () => {},
      );
      expect((await slot.init(prepared.bundle)).ok).to.equal(true);
      slot.endInvocation();
    };
    await init(first);
    expect(await run(first)).to.deep.equal({ calls: 1, mark: null });
    expect(await run(first)).to.deep.equal({ calls: 2, mark: "left behind" });
    const second = first.takeOver("u_1\u0000dc_2");
    try {
      expect(second.isolate).to.equal(first.isolate);
      expect(first.disposed).to.equal(true);
      expect(() => first.takeOver("u_1\u0000dc_3")).to.throw(/idle, healthy/);
      await init(second);
      expect(await run(second)).to.deep.equal({ calls: 1, mark: null });
    } finally {
      second.dispose();
    }
    expect(first.isolate.isDisposed).to.equal(true);
  });

  it("takes over only an idle isolate of the same owner, component version and memory, and only when the runner is full", () => {
    const env = { limits: DEFAULT_LIMITS, allowPrivateNetworks: false, prelude: "" };
    const made: IsolateSlot[] = [];
    const slot = (key: string, bundleKey = "b1", memoryMb = 64) => {
      const s = new IsolateSlot(key, bundleKey, memoryMb, env);
      made.push(s);
      return [key, s] as const;
    };
    try {
      const want = { ownerId: "u_1", bundleKey: "b1", memoryMb: 64 };
      const busy = slot("u_1\u0000dc_busy");
      busy[1].current = new InvocationRecord(
        0,
        Date.now() + 5000,
        "{}",
        1000,
        () => {},
        () => {},
      );
      const slots = new Map([
        slot("u_2\u0000dc_other_owner"),
        busy,
        slot("u_1\u0000dc_other_bundle", "b2"),
        slot("u_1\u0000dc_other_memory", "b1", 128),
        slot("u_1\u0000dc_idle_old"),
        slot("u_1\u0000dc_idle_new"),
      ]);
      expect(takeReusableSlot(slots, 6, 7, want), "the runner is not full").to.equal(undefined);
      expect(takeReusableSlot(slots, 6, 6, want)?.key).to.equal("u_1\u0000dc_idle_old");
      expect(slots.has("u_1\u0000dc_idle_old")).to.equal(false);
      expect(takeReusableSlot(slots, 5 + 1, 6, want)?.key, "cold starts under way count").to.equal("u_1\u0000dc_idle_new");
      expect(takeReusableSlot(slots, 4, 4, want), "nothing else qualifies").to.equal(undefined);
      expect(takeReusableSlot(slots, 4, 4, { ...want, ownerId: "u_2" })?.key).to.equal("u_2\u0000dc_other_owner");
    } finally {
      for (const s of made) s.dispose();
    }
  });

  it("reports a thrown error with name, message and stack, keeping earlier emits", async () => {
    const prepared = await prepareCode(
      runtime,
      `import { ConfigurationError } from "@pipedream/platform";
       export default { name: "t", version: "1", async run(event) { this.$emit({ before: true }); if (event.config) throw new ConfigurationError("set the token"); throw new TypeError("bad input"); } };`,
    );
    const outcome = await runtime.invoke(invocation(prepared));
    expect(outcome.ok).to.equal(false);
    expect(outcome.error).to.include({ name: "TypeError", message: "bad input", code: "USER_ERROR" });
    expect(outcome.error?.stack).to.match(/TypeError: bad input\n\s+at /);
    expect(outcome.emits).to.deep.equal([{ event: { before: true }, meta: {} }]);
    const config = await runtime.invoke(invocation(prepared, { event: { config: true } }));
    expect(config.error).to.include({ name: "ConfigurationError", code: "CONFIGURATION_ERROR" });
  });

  it("rejects a malformed invocation before it reaches a child", async () => {
    const prepared = await prepareCode(runtime, `export default { name: "n", version: "1", async run() {} };`);
    const err = await runtime.invoke({ ...invocation(prepared), method: "explode" as "run" }).catch((e: unknown) => e);
    expect((err as Error).name).to.equal("InvalidInvocationError");
    const bigint = await runtime.invoke({ ...invocation(prepared), props: { n: 1n } }).catch((e: unknown) => e);
    expect((bigint as Error).message).to.match(/not JSON-serializable/);
  });
});
