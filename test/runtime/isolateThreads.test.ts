// A runner child with many invocations under way, each in an isolate of its own, runs them on
// isolated-vm's thread pool: it does not start a thread per call when the pool is busy. And the
// child's V8 runs with the flags its many small isolates need.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import type { Runtime } from "../../src/runtime/index.js";
import { invocation, prepareCode, startRuntime } from "./support.js";

/** The last process or thread id the kernel handed out (it hands them out in turn). */
const lastPid = (): number => Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));

describe("runtime: the runner child's threads and V8 flags", function () {
  this.timeout(120_000);
  let runtime: Runtime;

  before(async () => {
    runtime = await startRuntime({ workers: 1 });
  });
  after(async () => runtime.close());

  it("runs of 64 owners at once, each in its own isolate, start (almost) no threads", async () => {
    // Each run computes for a few milliseconds, so the runs overlap in the child.
    const prepared = await prepareCode(
      runtime,
      `export default { name: "spin", version: "0.0.1", async run(event) {
         const until = Date.now() + 3; let n = 0; while (Date.now() < until) n++;
         this.$emit({ n: event.n, spun: n > 0 });
       } };`,
    );
    const owners = Array.from({ length: 64 }, (_, i) => ({ ownerId: `u_pool${i}`, sourceId: `dc_pool${i}` }));
    const round = async (n: number) => {
      const outcomes = await Promise.all(owners.map((o) => runtime.invoke(invocation(prepared, { ...o, event: { n } }))));
      for (const outcome of outcomes) expect(outcome.ok, JSON.stringify(outcome.error)).to.equal(true);
      expect(outcomes.map((o) => (o.emits[0].event as { n: number }).n)).to.deep.equal(owners.map(() => n));
    };
    // Warm: every owner's isolate and context exist, and isolated-vm's pool has its threads.
    await round(0);
    const before = lastPid();
    for (let n = 1; n <= 10; n++) await round(n);
    const started = lastPid() - before;
    // 640 runs. Without the gate isolated-vm started a thread for nearly every run its pool could
    // not take (~600 here); with it, a handful (its timer threads; other processes of the machine
    // take ids meanwhile too).
    expect(started, "thread and process ids the kernel handed out during 640 runs").to.be.below(64);
  });

  it("runs its children with V8's memory reducer at one full GC per quiet spell, not three", () => {
    // The flag is process-wide in V8, so every isolate of the child has it (docs/decisions.md).
    for (const pid of runtime.pids()) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      expect(argv).to.include("--memory-reducer-single-gc");
      expect(argv).to.include("--no-node-snapshot");
    }
  });
});
