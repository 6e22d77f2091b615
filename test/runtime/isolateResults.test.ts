// The runner child's reading of an isolate's proposed result: what a prelude whose built-ins were
// replaced could hand back. Only a well-formed ok result makes an ok run; everything else fails
// closed, as a limit (LIMIT_EXCEEDED) or as a corrupted sandbox (SANDBOX_CORRUPTED).
import { expect } from "chai";
import { DEFAULT_LIMITS } from "../../src/runtime/index.js";
import { IsolateResultError, readLoadResult, readRunResult } from "../../src/runtime/sandbox/isolateResults.js";

const base = { ok: true, error: null, returnValue: null, exports: null, exited: null, droppedLogLines: 0 };
const text = (over: Record<string, unknown>) => JSON.stringify({ ...base, ...over });

function refusal(raw: unknown): IsolateResultError {
  try {
    readRunResult(raw, DEFAULT_LIMITS);
  } catch (err) {
    expect(err).to.be.instanceOf(IsolateResultError);
    return err as IsolateResultError;
  }
  throw new Error(`accepted: ${String(raw).slice(0, 200)}`);
}

describe("runtime: reading the isolate's result", () => {
  it("accepts a well-formed ok result and a well-formed failure", () => {
    expect(readRunResult(text({ returnValue: '{"a":1}', exports: '{"$summary":"x"}' }), DEFAULT_LIMITS)).to.deep.equal({
      ok: true,
      returnValue: '{"a":1}',
      exports: '{"$summary":"x"}',
      droppedLogLines: 0,
    });
    const failed = readRunResult(
      text({ ok: false, error: { name: "TypeError", message: "m", stack: null, code: "USER_ERROR" }, droppedLogLines: 3 }),
      DEFAULT_LIMITS,
    );
    expect(failed).to.deep.equal({ ok: false, error: { name: "TypeError", message: "m", code: "USER_ERROR" }, droppedLogLines: 3 });
    expect(readRunResult(text({ exited: { reason: null } }), DEFAULT_LIMITS).exited).to.deep.equal({});
  });

  it("fails closed on anything malformed", () => {
    const malformed: [string, unknown][] = [
      ["not text", { ok: true }],
      ["not JSON", '{"ok":true'],
      ["an array", "[true]"],
      ["ok missing", JSON.stringify({ ...base, ok: undefined })],
      ["ok as a string", text({ ok: "true" })],
      ["an extra key", text({ forged: true })],
      ["ok with an error", text({ error: { name: "E", message: "m", stack: null, code: "USER_ERROR" } })],
      ["not ok without an error", text({ ok: false })],
      ["a platform code", text({ ok: false, error: { name: "E", message: "m", stack: null, code: "TIMEOUT" } })],
      ["an error with extra keys", text({ ok: false, error: { name: "E", message: "m", stack: null, code: "USER_ERROR", ok: true } })],
      ["a message too long", text({ ok: false, error: { name: "E", message: "m".repeat(9000), stack: null, code: "USER_ERROR" } })],
      ["a negative count", text({ droppedLogLines: -1 })],
      ["a return value that is not JSON", text({ returnValue: "{nope" })],
      ["exports that are not an object", text({ exports: "[1]" })],
      [
        "a failure with a return value",
        text({ ok: false, error: { name: "E", message: "m", stack: null, code: "USER_ERROR" }, returnValue: "1" }),
      ],
      ["a nested envelope", text({ exited: { reason: { deep: [[1]] } } })],
    ];
    for (const [what, raw] of malformed) {
      const err = refusal(raw);
      expect(err.limit, what).to.equal(false);
      expect(err.message, what).to.match(
        /^the sandbox returned a malformed result \(.+\); built-ins may have been replaced by the component$/,
      );
    }
  });

  it("refuses user values over the size or depth limit as limits", () => {
    const deep = `${"[".repeat(200)}${"]".repeat(200)}`;
    for (const [raw, message] of [
      [
        text({ returnValue: JSON.stringify("x".repeat(600 * 1024)) }),
        /^the return value is 614402 bytes of JSON, over the limit of 524288 bytes$/,
      ],
      [text({ returnValue: deep }), /^the return value is nested deeper than the limit/],
      [text({ exports: `{"a":${deep}}` }), /^the exports \(\$\.export\) is nested deeper than the limit/],
      [JSON.stringify({ ...base, returnValue: "x".repeat(20 * 1024 * 1024) }), /^the sandbox's result is over \d+ characters$/],
    ] as const) {
      const err = refusal(raw);
      expect(err.limit).to.equal(true);
      expect(err.message).to.match(message);
    }
  });

  it("reads load results: a description only when asked, LOAD_ERROR as the only code", () => {
    expect(readLoadResult('{"ok":true,"error":null,"describe":{"exportKind":"object"}}', true)).to.deep.equal({
      ok: true,
      describe: '{"exportKind":"object"}',
    });
    expect(readLoadResult('{"ok":true,"error":null,"describe":null}', false)).to.deep.equal({ ok: true });
    expect(() => readLoadResult('{"ok":true,"error":null,"describe":null}', true)).to.throw(
      IsolateResultError,
      /the description must be an object/,
    );
    expect(() =>
      readLoadResult('{"ok":false,"error":{"name":"E","message":"m","stack":null,"code":"USER_ERROR"},"describe":null}', false),
    ).to.throw(IsolateResultError, /is not one the component may report/);
    expect(() => readLoadResult(`{"ok":true,"error":null,"describe":{"a":${"[".repeat(200)}${"]".repeat(200)}}}`, true)).to.throw(
      IsolateResultError,
      /too large or too deep/,
    );
  });
});
