import { expect } from "chai";
import { tickSchedule } from "./ticks.js";

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe("scheduler/ticks", () => {
  describe("interval timers", () => {
    const every = tickSchedule({ intervalSeconds: 60 });
    const last = at("2030-01-01T00:00:00Z");

    it("ticks one interval after the last one", () => {
      expect(iso(every.next(last))).to.equal("2030-01-01T00:01:00.000Z");
    });
    it("is not due before that", () => {
      expect(every.due(last, last + 59_999)).to.equal(undefined);
    });
    it("after a downtime, only the newest missed tick is due, in the same phase", () => {
      expect(iso(every.due(last, at("2030-01-01T05:17:42Z")))).to.equal("2030-01-01T05:17:00.000Z");
    });
  });

  describe("cron timers", () => {
    it("are evaluated in UTC", () => {
      const noon = tickSchedule({ cron: "0 12 * * *" });
      expect(iso(noon.next(at("2030-06-01T00:00:00Z")))).to.equal("2030-06-01T12:00:00.000Z");
    });
    it("are read in their time zone when they have one, daylight saving time included", () => {
      const nineInNewYork = tickSchedule({ cron: "0 9 * * *", timezone: "America/New_York" });
      // EST (UTC-5) in January, EDT (UTC-4) in July.
      expect(iso(nineInNewYork.next(at("2030-01-15T00:00:00Z")))).to.equal("2030-01-15T14:00:00.000Z");
      expect(iso(nineInNewYork.next(at("2030-07-15T00:00:00Z")))).to.equal("2030-07-15T13:00:00.000Z");
      const missed = nineInNewYork.due(at("2030-07-14T13:00:00Z"), at("2030-07-16T20:00:00Z"));
      expect(iso(missed)).to.equal("2030-07-16T13:00:00.000Z");
    });
    it("take a seconds field", () => {
      const everyTwo = tickSchedule({ cron: "*/2 * * * * *" });
      expect(iso(everyTwo.next(at("2030-06-01T00:00:00.500Z")))).to.equal("2030-06-01T00:00:02.000Z");
    });
    it("are due at their tick, not before", () => {
      const minutely = tickSchedule({ cron: "* * * * *" });
      const last = at("2030-06-01T00:00:00Z");
      expect(minutely.due(last, at("2030-06-01T00:00:59.999Z"))).to.equal(undefined);
      expect(iso(minutely.due(last, at("2030-06-01T00:01:00Z")))).to.equal("2030-06-01T00:01:00.000Z");
      expect(iso(minutely.due(last, at("2030-06-01T00:01:00.999Z")))).to.equal("2030-06-01T00:01:00.000Z");
    });
    it("after a long downtime, only the newest missed tick is due, found at once", () => {
      const everySecond = tickSchedule({ cron: "* * * * * *" });
      // Three days of ticks every second: more than a tick-by-tick walk capped at 100,000 steps reaches.
      const tick = everySecond.due(at("2030-06-01T00:00:00Z"), at("2030-06-04T07:08:09.250Z"));
      expect(iso(tick)).to.equal("2030-06-04T07:08:09.000Z");
    });
    it("irregular patterns give the newest tick at or before now", () => {
      const twiceAnHour = tickSchedule({ cron: "0 0,45 * * * *" });
      expect(iso(twiceAnHour.due(at("2030-06-01T00:00:00Z"), at("2030-06-01T03:30:00Z")))).to.equal("2030-06-01T03:00:00.000Z");
      expect(iso(twiceAnHour.due(at("2030-06-01T00:00:00Z"), at("2030-06-01T03:50:00Z")))).to.equal("2030-06-01T03:45:00.000Z");
    });
  });
});
