// The runner child's trusted code against a fully subverted isolate: a real isolate whose
// "prelude" calls the bridge callbacks with whatever it likes and returns forged results — the
// worst a component that replaced every built-in could achieve. Nothing it proposes passes a
// limit or turns into an ok run.
import { expect } from "chai";
import { DEFAULT_LIMITS } from "../../src/runtime/index.js";
import { IsolateResultError, readRunResult } from "../../src/runtime/sandbox/isolateResults.js";
import { InvocationRecord, IsolateSlot } from "../../src/runtime/sandbox/isolateSlot.js";
import type { HttpResponse } from "../../src/runtime/types.js";

// Runs `body` as the isolate's invoke; `B` holds the raw bridge callbacks; `out` is returned as
// the return value of an otherwise well-formed ok result unless `body` returns its own answer.
const SUBVERTED = `
globalThis.__hw_entry = {
  load() { return '{"ok":true,"error":null,"describe":null}'; },
  dispatch() {},
  invoke(payload) {
    const B = { emit: __hw_bridge_emit, db: __hw_bridge_db, respond: __hw_bridge_respond, log: __hw_bridge_log, send: __hw_bridge_send };
    const out = [];
    const own = new Function("B", "out", JSON.parse(payload).body)(B, out);
    if (own !== undefined) return Promise.resolve(own);
    return Promise.resolve(JSON.stringify({ ok: true, error: null, returnValue: JSON.stringify(out), exports: null, exited: null, droppedLogLines: 0 }));
  },
};`;

interface Run {
  rec: InvocationRecord;
  responses: HttpResponse[];
  result?: ReturnType<typeof readRunResult>;
  refused?: IsolateResultError;
}

async function subverted(body: string, db = "{}"): Promise<Run> {
  const slot = new IsolateSlot("k", `b${Math.random()}`, 64, { limits: DEFAULT_LIMITS, allowPrivateNetworks: false, prelude: SUBVERTED });
  const responses: HttpResponse[] = [];
  const rec = new InvocationRecord(
    1,
    Date.now() + 5000,
    db,
    DEFAULT_LIMITS.maxDbBytes,
    () => {},
    (r) => responses.push(r),
  );
  slot.current = rec;
  try {
    await slot.init("/* no component */", false);
    const raw = await slot.invoke(JSON.stringify({ body }), db);
    try {
      return { rec, responses, result: readRunResult(raw, DEFAULT_LIMITS) };
    } catch (err) {
      if (err instanceof IsolateResultError) return { rec, responses, refused: err };
      throw err;
    }
  } finally {
    slot.endInvocation();
    slot.dispose();
  }
}

const returned = (r: Run) => JSON.parse(r.result!.returnValue!) as unknown[];

describe("runtime: trusted side against a subverted isolate", function () {
  this.timeout(30_000);

  it("emits: keeps the valid ones before the first violation, refuses the rest", async () => {
    const cases: [string, string, RegExp][] = [
      ["an object instead of JSON text", `B.emit({ a: 1 });`, /^\$emit: the event did not arrive as JSON text/],
      ["JSON text that is not JSON", `B.emit('{"a":');`, /^\$emit: the event is not valid JSON text/],
      [
        "over 512 KB",
        `B.emit(JSON.stringify("x".repeat(600 * 1024)));`,
        /^\$emit: an event is 614402 bytes of JSON, over the limit of 524288 bytes per event$/,
      ],
      ["nested 200 levels", `B.emit("[".repeat(200) + "]".repeat(200));`, /^\$emit: an event is nested deeper than 128 levels$/],
      ["a long meta name", `B.emit("1", undefined, "n".repeat(300));`, /^\$emit: meta\.name is 300 characters, over the limit of 200$/],
      ["a platform channel's name", `B.emit("1", undefined, "$logs");`, /^\$emit: meta\.name "\$logs" is reserved/],
      ["an object id", `B.emit("1", { id: 1 });`, /^\$emit: meta\.id must be a string or a number, got object$/],
      ["a fractional ts", `B.emit("1", undefined, undefined, undefined, 1.5);`, /^\$emit: meta\.ts must be an integer/],
    ];
    for (const [what, bad, message] of cases) {
      const r = await subverted(`B.emit('{"first":1}', "id1", undefined, "s".repeat(5000)); ${bad} B.emit('{"after":1}');`);
      expect(r.rec.emits, what).to.deep.equal([{ event: '{"first":1}', meta: { id: "id1", summary: "s".repeat(1024) } }]);
      expect(r.rec.violation?.message, what).to.match(message);
      expect(r.rec.violation?.code, what).to.equal(
        /did not arrive|not valid JSON/.test(String(message)) ? "SANDBOX_CORRUPTED" : "LIMIT_EXCEEDED",
      );
    }
    const many = await subverted(`for (let i = 0; i < 1100; i++) B.emit(String(i));`);
    expect(many.rec.emits).to.have.length(1000);
    expect(many.rec.violation).to.deep.equal({
      name: "LimitExceededError",
      code: "LIMIT_EXCEEDED",
      message: "$emit: more than 1000 events were emitted; the limit is 1000 per invocation",
    });
  });

  it("$.send: keeps the valid sends before the first violation, refuses forged, oversized and extra ones", async () => {
    const good = JSON.stringify({ kind: "email", subject: "ok" });
    const cases: [string, string, string, RegExp][] = [
      [
        "an object instead of JSON text",
        `B.send({ kind: "email" });`,
        "SANDBOX_CORRUPTED",
        /^\$\.send: the destination did not arrive as JSON text/,
      ],
      ["JSON text that is not JSON", `B.send('{"kind":');`, "SANDBOX_CORRUPTED", /not valid JSON text/],
      [
        "a subject with a header injected",
        `B.send(JSON.stringify({ kind: "email", subject: "a\\r\\nBcc: victim@example.com" }));`,
        "SANDBOX_CORRUPTED",
        /subject contains CR, LF or NUL/,
      ],
      ["an unknown kind", `B.send(JSON.stringify({ kind: "sms", to: "1" }));`, "SANDBOX_CORRUPTED", /unknown destination "sms"/],
      [
        "an http send to another scheme",
        `B.send(JSON.stringify({ kind: "http", method: "POST", url: "file:///etc/passwd", headers: {} }));`,
        "SANDBOX_CORRUPTED",
        /url must be an http/,
      ],
      [
        "over 512 KB",
        `B.send(JSON.stringify({ kind: "s3", bucket: "b-1", prefix: "", payload: "x".repeat(600 * 1024) }));`,
        "LIMIT_EXCEEDED",
        /over the limit of 524288 bytes/,
      ],
      [
        "nested 200 levels",
        `B.send('{"kind":"s3","bucket":"b-1","prefix":"","payload":' + "[".repeat(200) + "]".repeat(200) + "}");`,
        "LIMIT_EXCEEDED",
        /nested deeper than 128 levels/,
      ],
      ["a 17th send", `for (let i = 0; i < 20; i++) B.send(${JSON.stringify(good)});`, "LIMIT_EXCEEDED", /more than 16 sends/],
    ];
    for (const [what, bad, code, message] of cases) {
      const r = await subverted(`B.send(${JSON.stringify(good)}); ${bad} B.send(${JSON.stringify(good)});`);
      expect(r.rec.violation?.code, what).to.equal(code);
      expect(r.rec.violation?.message, what).to.match(message);
      const expected = what === "a 17th send" ? 16 : 1;
      expect(r.rec.sends, what).to.have.length(expected);
      expect(JSON.parse(r.rec.sends[0]), what).to.deep.equal({ kind: "email", subject: "ok" });
    }
  });

  it("db.set: every write is checked where the isolate cannot reach; the snapshot is built there", async () => {
    const r = await subverted(
      `
      const tries = [[123, "1"], ["k".repeat(1025), "1"], ["deep", "[".repeat(200) + "]".repeat(200)], ["bad", "{nope"], ["obj", { a: 1 }],
        ["big", JSON.stringify("x".repeat(61400))], ["a", '{"ok":1}'], ["old", undefined]];
      for (const [k, v] of tries) out.push(B.db(k, v));`,
      JSON.stringify({ old: "o".repeat(100) }),
    );
    expect(returned(r)).to.deep.equal([
      { name: "TypeError", message: "this.db.set: the key must be a string, got number" },
      {
        name: "DbLimitError",
        message: `this.db.set(${JSON.stringify(`${"k".repeat(100)}…`)}): the key is 1025 bytes, over the limit of 1024 bytes`,
      },
      { name: "DbLimitError", message: 'this.db.set("deep"): the value is nested deeper than 128 levels' },
      { name: "TypeError", message: 'this.db.set("bad"): the value is not valid JSON text' },
      { name: "TypeError", message: 'this.db.set("obj"): the value must arrive as JSON text' },
      {
        name: "DbLimitError",
        message: `this.db.set("big"): the source's data would be ${3 + 102 + 3 + 61402} bytes, over the limit of 61440 bytes (60 KB) per source`,
      },
      null,
      null,
    ]);
    expect(r.rec.db.changed).to.equal(true);
    expect(JSON.parse(r.rec.db.snapshot())).to.deep.equal({ a: { ok: 1 } });
  });

  it("respond: a malformed or oversized response is refused and fails the run; a valid one is delivered", async () => {
    const cases: [string, string, RegExp][] = [
      ["a 101", `B.respond(101, "{}", "empty", null);`, /informational \(1xx\)/],
      [
        "CR LF in a header",
        `B.respond(200, JSON.stringify({ "x-a": "1\\r\\nSet-Cookie: a=b" }), "empty", null);`,
        /contains CR, LF or NUL/,
      ],
      ["an invalid header name", `B.respond(200, JSON.stringify({ "a b": "1" }), "empty", null);`, /is not a valid header name/],
      ["nested headers", `B.respond(200, JSON.stringify({ a: { b: { c: 1 } } }), "empty", null);`, /the headers are not acceptable/],
      ["an unknown body kind", `B.respond(200, "{}", "file", "/etc/passwd");`, /the response arrived malformed/],
      [
        "a body over 6 MB",
        `B.respond(200, "{}", "text", "b".repeat(7 * 1024 * 1024));`,
        /the body is 7340032 bytes, over the limit of 6291456 bytes/,
      ],
      ["bytes over 6 MB", `B.respond(200, "{}", "bytes", new Uint8Array(7 * 1024 * 1024));`, /the body is 7340032 bytes/],
      [
        "a JSON body nested 200 levels",
        `B.respond(200, "{}", "json", "[".repeat(200) + "]".repeat(200));`,
        /nested deeper than 128 levels/,
      ],
    ];
    for (const [what, bad, message] of cases) {
      const r = await subverted(bad);
      expect(r.responses, what).to.deep.equal([]);
      expect(r.rec.violation?.message, what).to.match(message);
    }
    const ok = await subverted(
      `B.respond(200, JSON.stringify({ "X-A": ["1", 2] }), "bytes", new Uint8Array([0, 255])); B.respond(500, "{}", "text", "second");`,
    );
    expect(ok.responses).to.deep.equal([{ status: 200, headers: { "x-a": ["1", "2"] }, body: { base64: "AP8=" } }]);
    expect(ok.rec.violation).to.equal(undefined);
  });

  it("forged results fail closed", async () => {
    const forged = [
      `return '{"ok":true}';`,
      `return JSON.stringify({ ok: true, error: null, returnValue: null, exports: null, exited: null, droppedLogLines: 0, db: { k: "x".repeat(1e6) } });`,
      `return JSON.stringify({ ok: true, error: { name: "E", message: "m", stack: null, code: "USER_ERROR" }, returnValue: null, exports: null, exited: null, droppedLogLines: 0 });`,
      `return JSON.stringify({ ok: false, error: { name: "E", message: "m", stack: null, code: "RUNNER_CRASHED" }, returnValue: null, exports: null, exited: null, droppedLogLines: 0 });`,
      `return 42;`,
      `return ['{"ok":true,"error":null,"returnValue":null,"exports":null,"exited":null,"droppedLogLines":0}'];`,
    ];
    for (const body of forged) {
      const r = await subverted(body);
      expect(r.result, body).to.equal(undefined);
      expect(r.refused?.limit, body).to.equal(false);
    }
  });
});
