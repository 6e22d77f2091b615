import { expect } from "chai";
import type { BusRecord } from "../bus.js";
import { RecentRecords } from "./recentRecords.js";

const record = (offset: number, partition = 0, bytes = 10): BusRecord => ({
  topic: "t",
  partition,
  offset: String(offset),
  key: "k",
  value: Buffer.alloc(bytes),
  headers: {},
  timestamp: 0,
});

describe("bus/embedded/recentRecords", () => {
  it("answers from its first offset to its end, per partition", () => {
    const recent = new RecentRecords();
    for (let o = 3; o <= 6; o++) recent.add(record(o));
    recent.add(record(0, 1));
    expect(recent.end("t", 0)).to.equal(7);
    expect(recent.read("t", 0, 2, 10)).to.equal(undefined);
    expect(recent.read("t", 0, 4, 2)!.map((r) => r.offset)).to.deep.equal(["4", "5"]);
    expect(recent.read("t", 0, 7, 10)).to.deep.equal([]);
    expect(recent.read("t", 0, 8, 10)).to.equal(undefined);
    expect(recent.read("t", 1, 0, 10)!.map((r) => r.offset)).to.deep.equal(["0"]);
    expect(recent.read("t", 2, 0, 10)).to.equal(undefined);
  });

  it("starts again after a gap", () => {
    const recent = new RecentRecords();
    recent.add(record(0));
    recent.add(record(1));
    recent.add(record(5));
    expect(recent.read("t", 0, 0, 10)).to.equal(undefined);
    expect(recent.read("t", 0, 5, 10)!.map((r) => r.offset)).to.deep.equal(["5"]);
  });

  it("stays within its bounds of records and bytes, dropping the oldest", () => {
    const byCount = new RecentRecords(4, 1_000_000);
    for (let o = 0; o < 10; o++) byCount.add(record(o));
    expect(byCount.read("t", 0, 5, 10)).to.equal(undefined);
    expect(byCount.read("t", 0, 6, 10)!.map((r) => r.offset)).to.deep.equal(["6", "7", "8", "9"]);
    const byBytes = new RecentRecords(1000, 100);
    for (let o = 0; o < 10; o++) byBytes.add(record(o, 0, 40));
    expect(byBytes.read("t", 0, 7, 10)).to.equal(undefined);
    expect(byBytes.read("t", 0, 8, 10)!.map((r) => r.offset)).to.deep.equal(["8", "9"]);
  });
});
