import { expect } from "chai";
import { OwnerSlots } from "./ownerSlots.js";

describe("runner/ownerSlots", () => {
  it("lets at most perOwner runs of one owner through, first come first served, without holding other owners", async () => {
    const slots = new OwnerSlots(2);
    const order: string[] = [];
    await slots.acquire("a");
    await slots.acquire("a");
    const third = slots.acquire("a").then(() => order.push("a3"));
    const fourth = slots.acquire("a").then(() => order.push("a4"));
    await slots.acquire("b");
    order.push("b1");
    expect(slots.running("a")).to.equal(2);
    slots.release("a");
    await third;
    slots.release("a");
    await fourth;
    expect(order).to.deep.equal(["b1", "a3", "a4"]);
    slots.release("a");
    slots.release("a");
    slots.release("b");
    expect(slots.running("a")).to.equal(0);
    expect(slots.running("b")).to.equal(0);
  });
});
