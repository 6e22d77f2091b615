// A workflow step's /tmp handed on to the next step through the runtime (keepTmp, tmp): bytes
// intact across the runner IPC, directories and mtimes kept, nothing handed on unasked or after a
// failure, what is given checked, and a warm isolate's next run still starting empty. Real isolates.
import { expect } from "chai";
import { startRuntime, invocation, prepareCode } from "./support.js";
import { InvalidInvocationError, type Runtime } from "../../src/runtime/index.js";
import type { PreparedComponent, TmpEntry } from "../../src/runtime/types.js";

const action = (body: string) => `import fs from "fs";
export default { name: "tmp step", version: "0.0.1", type: "action", props: {}, async run({ steps, $ }) { ${body} } };`;

describe("runtime: /tmp handed from one workflow step to the next", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  let writer: PreparedComponent;
  let reader: PreparedComponent;

  before(async () => {
    runtime = await startRuntime({ workers: 2, timeoutMs: 20_000, memoryMb: 256 });
    writer = await prepareCode(
      runtime,
      action(`
      const found = fs.readdirSync("/tmp");
      if (steps.fail) throw new Error("failed on purpose");
      fs.mkdirSync("/tmp/d/e", { recursive: true });
      fs.writeFileSync("/tmp/d/e/all.bin", Uint8Array.from({ length: 256 }, (_, i) => i));
      fs.writeFileSync("/tmp/t.txt", "text ✓");
      return found;`),
    );
    reader = await prepareCode(
      runtime,
      action(`
      return {
        all: Array.from(fs.readFileSync("/tmp/d/e/all.bin")),
        text: fs.readFileSync("/tmp/t.txt", "utf8"),
        dir: fs.statSync("/tmp/d/e").isDirectory(),
        mtimeMs: fs.statSync("/tmp/t.txt").mtimeMs,
        top: fs.readdirSync("/tmp").sort(),
      };`),
    );
  });
  after(() => runtime.close());

  it("answers the run's /tmp only when asked; the next invocation, in another runner child, gets it as it was", async () => {
    const unasked = await runtime.invoke(invocation(writer, { steps: {} }));
    expect(unasked.ok, JSON.stringify(unasked.error)).to.equal(true);
    expect(unasked.tmp).to.equal(undefined);

    const first = await runtime.invoke(invocation(writer, { steps: {}, keepTmp: true }));
    expect(first.ok, JSON.stringify(first.error)).to.equal(true);
    const tmp = first.tmp!;
    expect(tmp.map((e) => `${e.kind} ${e.path}`).sort()).to.deep.equal([
      "dir /tmp/d",
      "dir /tmp/d/e",
      "file /tmp/d/e/all.bin",
      "file /tmp/t.txt",
    ]);
    const all = tmp.find((e) => e.path === "/tmp/d/e/all.bin")!;
    expect(Array.from(all.data)).to.deep.equal(Array.from({ length: 256 }, (_, i) => i));
    const text = tmp.find((e) => e.path === "/tmp/t.txt")!;

    // Different source ids: different runner children (two workers) or at least different contexts.
    const next = await runtime.invoke(invocation(reader, { steps: {}, tmp }));
    expect(next.ok, JSON.stringify(next.error)).to.equal(true);
    expect(next.returnValue).to.deep.equal({
      all: Array.from({ length: 256 }, (_, i) => i),
      text: "text ✓",
      dir: true,
      mtimeMs: text.mtimeMs,
      top: ["d", "t.txt"],
    });
    expect(next.tmp).to.equal(undefined);
  });

  it("a warm isolate's next run starts with an empty /tmp, whatever the run before it was given", async () => {
    const inv = invocation(writer, { steps: {}, keepTmp: true });
    const first = await runtime.invoke(inv);
    expect(first.ok, JSON.stringify(first.error)).to.equal(true);
    const given = await runtime.invoke({ ...inv, invocationId: "given", tmp: first.tmp });
    expect(given.warm).to.equal(true);
    expect(given.returnValue).to.deep.equal(["d", "t.txt"]);
    const alone = await runtime.invoke({ ...inv, invocationId: "alone", keepTmp: undefined });
    expect(alone.warm).to.equal(true);
    expect(alone.returnValue).to.deep.equal([]);
  });

  it("a failed run hands nothing on", async () => {
    const failed = await runtime.invoke(invocation(writer, { steps: { fail: true }, keepTmp: true }));
    expect(failed.ok).to.equal(false);
    expect(failed.tmp).to.equal(undefined);
  });

  it("refuses a /tmp outside /tmp, with a path twice, or over 64 MB", async () => {
    const entry = (path: string, bytes = 1): TmpEntry => ({ path, kind: "file", data: new Uint8Array(bytes), mtimeMs: 1, birthtimeMs: 1 });
    for (const tmp of [
      [entry("/etc/passwd")],
      [entry("/tmp/../etc/passwd")],
      [entry("/tmp/a"), entry("/tmp/a")],
      [entry("/tmp/a", 40 * 1024 * 1024), entry("/tmp/b", 30 * 1024 * 1024)],
      [{ path: "/tmp/d", kind: "dir", data: new Uint8Array(1), mtimeMs: 1, birthtimeMs: 1 } as TmpEntry],
    ]) {
      let refused: unknown;
      try {
        await runtime.invoke(invocation(reader, { steps: {}, tmp }));
      } catch (err) {
        refused = err;
      }
      expect(refused, JSON.stringify(tmp.map((e) => e.path))).to.be.instanceOf(InvalidInvocationError);
    }
  });
});
