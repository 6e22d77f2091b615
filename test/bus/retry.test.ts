import { expect } from "chai";
import { retryDelay } from "../../src/bus/retry.js";

describe("handler retry backoff", () => {
  const policy = { initialMs: 100, maxMs: 5000 };

  it("doubles per failed attempt, with the jitter keeping each delay in [cap/2, cap]", () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelay(attempt, policy, () => 1))).to.deep.equal([100, 200, 400, 800]);
    expect([1, 2, 3, 4].map((attempt) => retryDelay(attempt, policy, () => 0))).to.deep.equal([50, 100, 200, 400]);
  });

  it("is capped at maxMs however long the failure streak", () => {
    expect(retryDelay(7, policy, () => 1)).to.equal(5000);
    expect(retryDelay(10_000, policy, () => 1)).to.equal(5000);
    expect(retryDelay(10_000, policy, () => 0)).to.equal(2500);
  });
});
