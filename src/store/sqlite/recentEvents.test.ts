import { expect } from "chai";
import type { RecordedEvent } from "../eventStore.js";
import { RecentEvents } from "./recentEvents.js";

const event = (position: number, stream = "s", revision = position): RecordedEvent => ({
  id: `e${position}`,
  type: "T",
  data: {},
  metadata: {},
  stream,
  revision,
  position,
  created: 0,
});

describe("store/sqlite/recentEvents", () => {
  it("answers from its first position on, and nothing before it", () => {
    const recent = new RecentEvents();
    for (let p = 5; p <= 9; p++) recent.add(event(p), 10);
    expect(recent.read(3, -1)).to.equal(undefined);
    expect(recent.read(4, -1)!.map((e) => e.position)).to.deep.equal([5, 6, 7, 8, 9]);
    expect(recent.read(6, 2)!.map((e) => e.position)).to.deep.equal([7, 8]);
    expect(recent.read(9, -1)).to.deep.equal([]);
    expect(recent.read(10, -1)).to.equal(undefined);
  });

  it("starts again after a gap: what lies in the gap is not its to answer", () => {
    const recent = new RecentEvents();
    recent.add(event(1), 10);
    recent.add(event(2), 10);
    recent.add(event(5), 10);
    expect(recent.read(0, -1)).to.equal(undefined);
    expect(recent.read(2, -1)).to.equal(undefined);
    expect(recent.read(4, -1)!.map((e) => e.position)).to.deep.equal([5]);
  });

  it("stays within its bounds of events and bytes, dropping the oldest", () => {
    const byCount = new RecentEvents(4, 1_000_000);
    for (let p = 1; p <= 10; p++) byCount.add(event(p), 10);
    expect(byCount.read(5, -1)).to.equal(undefined);
    expect(byCount.read(6, -1)!.map((e) => e.position)).to.deep.equal([7, 8, 9, 10]);
    const byBytes = new RecentEvents(1000, 100);
    for (let p = 1; p <= 10; p++) byBytes.add(event(p), 40);
    expect(byBytes.read(7, -1)).to.equal(undefined);
    expect(byBytes.read(8, -1)!.map((e) => e.position)).to.deep.equal([9, 10]);
  });

  it("forgets a stream's events before a truncation's revision", () => {
    const recent = new RecentEvents();
    recent.add(event(1, "a", 0), 10);
    recent.add(event(2, "b", 0), 10);
    recent.add(event(3, "a", 1), 10);
    recent.add(event(4, "a", 2), 10);
    recent.truncated("a", 2);
    expect(recent.read(0, -1)!.map((e) => e.position)).to.deep.equal([2, 4]);
  });
});
