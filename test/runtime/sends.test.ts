// $.send.* in the sandbox: what an action proposes, what the trusted side keeps (bounds, shapes),
// and additionalProps() described for the host.
import { expect } from "chai";
import type { Runtime } from "../../src/runtime/index.js";
import { normalizeSend, MAX_SENDS_PER_RUN } from "../../src/runtime/rules.js";
import { validateAdditionalProps } from "../../src/runtime/component/validate.js";
import { invocation, prepareCode, startRuntime } from "./support.js";

const action = (run: string, extra = "") =>
  `export default { name: "a", version: "1", type: "action", ${extra} async run({ $, steps }) { ${run} } };`;

describe("runtime: $.send.* and additionalProps", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  before(async () => {
    runtime = await startRuntime();
  });
  after(() => runtime.close());

  const run = async (body: string, extra = "", over = {}) =>
    runtime.invoke(invocation(await prepareCode(runtime, action(body, extra)), over));

  it("$.context says this is the step's first run; $.flow.delay, rerun and suspend fail the step as a configuration error naming them", async () => {
    // As rerun-polling actions open: their first branch runs, the rerun itself is refused.
    const first = await run(
      `const { run } = $.context; return { runs: run.runs, retries: run.retry_count, ts: typeof Date.parse($.context.ts) };`,
    );
    expect(first.ok, JSON.stringify(first.error)).to.equal(true);
    expect(first.returnValue).to.deep.equal({ runs: 1, retries: 0, ts: "number" });
    for (const name of ["delay", "rerun", "suspend"]) {
      const paused = await run(`$.export("before", 1); return $.flow.${name}(1000);`);
      expect(paused.ok, name).to.equal(false);
      expect(paused.error).to.include({
        name: "ConfigurationError",
        code: "CONFIGURATION_ERROR",
        message: `$.flow.${name}() is not available in Headwater: workflows run their steps in one go and are not paused or resumed`,
      });
    }
  });

  it("records http, email and s3 sends, normalized, in call order; sse is an emit on a channel", async () => {
    const outcome = await run(`
      $.send.http({ url: "https://example.com/hook", data: { a: 1 }, headers: { "X-N": 2 }, params: { q: "x", n: 3 } });
      $.send.http({ method: "put", url: "http://example.com" });
      $.send.email({ subject: "Hi", text: "body" });
      $.send.s3({ bucket: "my-bucket", prefix: "logs/", payload: [1, 2] });
      $.send.sse({ channel: "live", payload: { n: 1 } });
      $.send.emit({ raw_event: { e: 1 } });
      return "done";`);
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.returnValue).to.equal("done");
    expect(outcome.sends).to.deep.equal([
      {
        kind: "http",
        method: "POST",
        url: "https://example.com/hook",
        headers: { "x-n": "2" },
        params: { q: "x", n: "3" },
        data: { a: 1 },
      },
      { kind: "http", method: "PUT", url: "http://example.com", headers: {} },
      { kind: "email", subject: "Hi", text: "body" },
      { kind: "s3", bucket: "my-bucket", prefix: "logs/", payload: [1, 2] },
    ]);
    expect(outcome.emits).to.deep.equal([
      { event: { n: 1 }, meta: { name: "live" } },
      { event: { e: 1 }, meta: {} },
    ]);
  });

  it("wrong arguments throw a clear TypeError into the action", async () => {
    const cases: [string, RegExp][] = [
      [`$.send.http("https://x.example")`, /\$\.send\.http expects an object/],
      [`$.send.http({ url: "ftp://x.example/a" })`, /url must be an http:\/\/ or https:\/\/ URL/],
      [`$.send.http({ url: "https://x.example", method: "BREW" })`, /method must be one of GET, POST/],
      [`$.send.http({ url: "https://x.example", headers: { "bad name": "1" } })`, /not a valid header name/],
      [`$.send.http({ url: "https://x.example", headers: { a: "x\\r\\ny: 1" } })`, /CR, LF or NUL/],
      [`$.send.http({ url: "https://x.example", params: { a: {} } })`, /params\.a must be a string/],
      [`$.send.email({ text: "no subject" })`, /subject must be a non-empty string/],
      [`$.send.email({ subject: "a\\nBcc: x@example.com" })`, /subject contains CR, LF or NUL/],
      [`$.send.email({ subject: "s", html: 5 })`, /html must be a string/],
      [`$.send.s3({ bucket: "Bad_Bucket", prefix: "", payload: 1 })`, /bucket must be an S3 bucket name/],
      [`$.send.s3({ bucket: "my-bucket", prefix: "p/" })`, /payload is required/],
      [`$.send.s3({ bucket: "my-bucket", prefix: 7, payload: 1 })`, /prefix must be a string/],
      [`$.send.http({ url: "https://x.example", data: { n: 1n } })`, /not JSON-serializable/],
      [`$.send.sse({ payload: 1 })`, /channel must be a non-empty string/],
    ];
    for (const [call, message] of cases) {
      const outcome = await run(`try { ${call}; return "no error"; } catch (e) { return e.name + ": " + e.message; }`);
      expect(outcome.returnValue, call).to.match(/^TypeError: /);
      expect(outcome.returnValue, call).to.match(message);
      expect(outcome.sends, call).to.equal(undefined);
    }
  });

  it("at most 16 sends per run and 512 KB each: past that a SendLimitError (uncaught: LIMIT_EXCEEDED, earlier sends kept)", async () => {
    const many = await run(`for (let i = 0; i < 20; i++) $.send.http({ url: "https://x.example/" + i });`);
    expect(many.ok).to.equal(false);
    expect(many.error?.code).to.equal("LIMIT_EXCEEDED");
    expect(many.error?.message).to.match(/at most 16 sends/);
    expect(many.sends).to.have.length(MAX_SENDS_PER_RUN);
    const caught = await run(`
      try { $.send.s3({ bucket: "my-bucket", prefix: "", payload: "x".repeat(600 * 1024) }); } catch (e) { return e.name + ": " + e.message; }`);
    expect(caught.returnValue).to.match(/^SendLimitError: .*over the limit of 524288 bytes per send/);
    const deep = await run(`let v = 1; for (let i = 0; i < 200; i++) v = [v]; $.send.http({ url: "https://x.example", data: v });`);
    expect(deep.error?.code).to.equal("LIMIT_EXCEEDED");
  });

  it("sends made before a failure are returned with the failed outcome; a failed run has no return value", async () => {
    const outcome = await run(`$.send.email({ subject: "before" }); throw new Error("boom");`);
    expect(outcome.ok).to.equal(false);
    expect(outcome.error?.message).to.equal("boom");
    expect(outcome.sends).to.deep.equal([{ kind: "email", subject: "before" }]);
  });

  it("a component replacing JSON.stringify cannot forge a send (the platform uses the captured one; trustedSide.test.ts covers forged proposals)", async () => {
    const outcome = await run(`
      const realStringify = JSON.stringify;
      JSON.stringify = (v) => (v && v.kind === "email" ? '{"kind":"email","subject":"a\\nBcc: victim@example.com"}' : realStringify(v));
      $.send.email({ subject: "fine" });
      return 1;`);
    expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
    expect(outcome.sends).to.deep.equal([{ kind: "email", subject: "fine" }]);
  });

  it("additionalProps() is called with this = the configured props and its props come back described", async () => {
    const prepared = await prepareCode(
      runtime,
      `const app = { type: "app", app: "demo", propDefinitions: { region: { type: "string", options: ["eu", "us"], label: "Region" } } };
       export default { name: "a", version: "1", type: "action",
         props: { app, kind: { type: "string", options: ["one", "two"] } },
         async additionalProps(previous) {
           if (this.kind !== "two") return {};
           return { count: { type: "integer", min: 1, max: Object.keys(previous).length + 3 }, region: { propDefinition: [this.app, "region"] }, broken: { type: "nope" } };
         },
         async run() { return [this.kind, this.count, this.region]; } };`,
    );
    const none = await runtime.invoke(invocation(prepared, { method: "additionalProps", props: { kind: "one" } }));
    expect(none.ok, JSON.stringify(none.error)).to.equal(true);
    expect(validateAdditionalProps(none.returnValue, "action")).to.deep.equal({ problems: [], props: [] });
    const two = await runtime.invoke(invocation(prepared, { method: "additionalProps", props: { kind: "two", app: { $auth: {} } } }));
    const checked = validateAdditionalProps(two.returnValue, "action");
    expect(checked.props).to.deep.equal([
      { name: "count", type: "integer", optional: false, secret: false, min: 1, max: 5 },
      {
        name: "region",
        type: "string",
        label: "Region",
        optional: false,
        secret: false,
        options: ["eu", "us"],
        propDefinition: { app: "demo", name: "region" },
      },
    ]);
    expect(checked.problems).to.deep.equal([
      {
        path: "props.broken.type",
        message:
          'unknown prop type "nope" (app, boolean, integer, string, object, any, alert, dir, http_request, $.interface.http, $.interface.timer, $.service.db)',
      },
    ]);
    // The run sees the additional props' values too.
    const ran = await runtime.invoke(invocation(prepared, { props: { kind: "two", count: 4, region: "eu" } }));
    expect(ran.returnValue).to.deep.equal(["two", 4, "eu"]);
    const throwing = await runtime.invoke(
      invocation(await prepareCode(runtime, action("", `async additionalProps() { throw new Error("no way"); },`)), {
        method: "additionalProps",
      }),
    );
    expect(throwing.error?.message).to.equal("no way");
    const notObject = await runtime.invoke(
      invocation(await prepareCode(runtime, action("", `additionalProps() { return 5; },`)), { method: "additionalProps" }),
    );
    expect(notObject.error?.message).to.match(/must return an object of prop definitions/);
  });

  it("normalizeSend is the one rule both sides apply", () => {
    expect(normalizeSend("fax", {})).to.deep.equal({ ok: false, message: 'unknown destination "fax" (http, email or s3)' });
    expect(normalizeSend("s3", { bucket: "a.b-c", payload: null })).to.deep.equal({
      ok: true,
      value: { kind: "s3", bucket: "a.b-c", prefix: "", payload: null },
    });
    expect(normalizeSend("s3", { bucket: "-ab", payload: 1 }).ok).to.equal(false);
    expect(normalizeSend("http", { url: "https:///path" }).ok).to.equal(false);
  });
});
