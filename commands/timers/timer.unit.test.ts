import { expect } from "chai";
import { recordTick, timerInvocationId } from "./timer.js";

describe("commands/timers", () => {
  it("records a tick newer than the last one, and nothing for one already recorded or older", () => {
    const command = { sourceId: "dc_1", tick: 60_000, catchUp: false };
    expect(recordTick(command, { lastTick: undefined })).to.deep.equal([{ type: "TimerFired", data: command }]);
    expect(recordTick(command, { lastTick: 0 })).to.have.length(1);
    expect(recordTick(command, { lastTick: 60_000 }), "recorded by another scheduler").to.deep.equal([]);
    expect(recordTick(command, { lastTick: 120_000 }), "older than the newest").to.deep.equal([]);
  });
  it("derives one invocation id per source and tick", () => {
    expect(timerInvocationId("dc_1", 60_000)).to.equal("inv_dc_1_60000");
    expect(timerInvocationId("dc_1", 60_000)).to.not.equal(timerInvocationId("dc_1", 120_000));
  });
});
