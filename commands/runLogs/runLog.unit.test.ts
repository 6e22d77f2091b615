import { expect } from "chai";
import { MAX_LOG_LINES, runLogged, skippedRunLogged } from "./runLog.js";

const run = {
  sourceId: "dc_1",
  invocationId: "inv_1",
  trigger: "http" as const,
  userId: "u_1",
  startedMs: 1000,
  endedMs: 1250,
  wallMs: 250.4,
  warnings: [],
};

describe("commands/runLogs", () => {
  it("logs a run between its start and end lines, billing its wall-clock time", () => {
    const logged = runLogged({ ...run, ok: true, error: null, lines: [{ ts: 1100, level: "log", message: "hi" }] });
    expect(logged.data.lines.map((l) => l.message)).to.deep.equal(["http run inv_1 started", "hi", "http run inv_1 ended ok in 250 ms"]);
    expect(logged.data).to.include({ computeMs: 250, ok: true, error: null, userId: "u_1" });
  });
  it("keeps at most MAX_LOG_LINES console lines and says how many were dropped; warnings and the error come last", () => {
    const lines = Array.from({ length: MAX_LOG_LINES + 7 }, (_, i) => ({ ts: 1000 + i, level: "log", message: `l${i}` }));
    const logged = runLogged({ ...run, ok: false, error: { name: "Error", message: "bad" }, lines, warnings: ["dedupe"] });
    const messages = logged.data.lines.map((l) => l.message);
    expect(messages).to.have.length(MAX_LOG_LINES + 5);
    expect(messages.slice(-4)).to.deep.equal([
      "7 more log lines were dropped",
      "dedupe",
      "Error: bad",
      "http run inv_1 ended with an error in 250 ms",
    ]);
  });
  it("a skipped invocation is logged as not run and not billed", () => {
    const logged = skippedRunLogged({ sourceId: "dc_1", userId: "u_1", invocationId: "inv_2", trigger: "http", nowMs: 5 });
    expect(logged.data).to.include({ skipped: "paused", computeMs: 0, ok: false });
    expect(logged.data.error?.name).to.equal("SourcePaused");
  });
});
