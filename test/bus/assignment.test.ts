import { expect } from "chai";
import { assignPartitions } from "../../src/bus/embedded/assignment.js";
import { partitionKey } from "../../src/bus/partition.js";

describe("embedded group partition assignment", () => {
  it("spreads partitions round-robin over the members subscribed to each topic", () => {
    const members = [
      { id: 1, topics: new Set(["invocations", "emits"]) },
      { id: 2, topics: new Set(["invocations"]) },
    ];
    const assignment = assignPartitions(
      members,
      new Map([
        ["invocations", 4],
        ["emits", 2],
      ]),
    );
    expect([0, 1].map((p) => assignment.get(partitionKey("emits", p)))).to.deep.equal([1, 1]);
    expect([0, 1, 2, 3].map((p) => assignment.get(partitionKey("invocations", p)))).to.deep.equal([1, 2, 1, 2]);
  });

  it("leaves partitions of a topic nobody subscribes to unassigned", () => {
    const assignment = assignPartitions(
      [{ id: 1, topics: new Set(["a"]) }],
      new Map([
        ["a", 1],
        ["b", 2],
      ]),
    );
    expect(assignment.get(partitionKey("b", 0))).to.equal(undefined);
    expect(assignment.get(partitionKey("a", 0))).to.equal(1);
  });
});
