import { expect } from "chai";
import { Readiness } from "./health.js";

describe("Readiness", () => {
  const ok = () => Promise.resolve();
  const caughtUp = () => Promise.resolve({ lag: 3 });

  it("is ready when the log, the bus and the projections answer", async () => {
    const report = await new Readiness({ log: ok, bus: ok, projections: caughtUp }).report();
    expect(report.ready).to.equal(true);
    expect(report.checks.projections).to.include({ ok: true, lag: 3 });
  });

  it("is not ready when a probe fails, naming it", async () => {
    const report = await new Readiness({ log: ok, bus: () => Promise.reject(new Error("broker down")), projections: caughtUp }).report();
    expect(report.ready).to.equal(false);
    expect(report.checks.bus).to.include({ ok: false, error: "broker down" });
    expect(report.checks.log.ok).to.equal(true);
  });

  it("is not ready when a probe does not answer in time", async () => {
    const never = () => new Promise<{ lag: number }>(() => undefined);
    const report = await new Readiness({ log: ok, bus: ok, projections: never }, { timeoutMs: 50, reuseMs: 0 }).report();
    expect(report.ready).to.equal(false);
    expect(report.checks.projections.error).to.match(/no answer within 50 ms/);
  });

  it("runs one check at a time and reuses its answer briefly", async () => {
    let calls = 0;
    const counted = () => {
      calls++;
      return Promise.resolve();
    };
    const readiness = new Readiness({ log: counted, bus: ok, projections: caughtUp }, { timeoutMs: 1000, reuseMs: 10_000 });
    await Promise.all([readiness.report(), readiness.report(), readiness.report()]);
    await readiness.report();
    expect(calls).to.equal(1);
  });

  it("is not ready once the node is closing", async () => {
    const readiness = new Readiness({ log: ok, bus: ok, projections: caughtUp });
    readiness.closing();
    expect(await readiness.report()).to.include({ ready: false, closing: true });
  });
});
