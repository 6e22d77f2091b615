import { expect } from "chai";
import { IsolateCallGate, type IsolatePass } from "./isolateGate.js";

/** A call that settles when told. */
function pending(): { promise: Promise<string>; settle(value: string): void; fail(err: Error): void } {
  let settle!: (value: string) => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<string>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  return { promise, settle, fail };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("IsolateCallGate", () => {
  it("lets in at most `capacity` calls at once, the others in the order they came", async () => {
    const gate = new IsolateCallGate(2, 60_000);
    const calls = [pending(), pending(), pending(), pending()];
    const started: number[] = [];
    const results = calls.map((c, i) =>
      gate.enter(() => {
        started.push(i);
        return c.promise;
      }),
    );
    await tick();
    expect(started).to.deep.equal([0, 1]);
    expect(gate.load).to.deep.equal({ executing: 2, waiting: 2 });
    calls[1].settle("b");
    expect(await results[1]).to.equal("b");
    await tick();
    expect(started).to.deep.equal([0, 1, 2]);
    calls[0].fail(new Error("gone"));
    let failed: unknown;
    await results[0].catch((err) => (failed = err));
    expect((failed as Error).message).to.equal("gone"); // a failing call frees its place too
    await tick();
    expect(started).to.deep.equal([0, 1, 2, 3]);
    calls[2].settle("c");
    calls[3].settle("d");
    expect(await Promise.all(results.slice(2))).to.deep.equal(["c", "d"]);
    expect(gate.load).to.deep.equal({ executing: 0, waiting: 0 });
  });

  it("a call that releases its pass early (it awaits the host) lets the next one in while it stays open", async () => {
    const gate = new IsolateCallGate(1, 60_000);
    const first = pending();
    let pass: IsolatePass | undefined;
    const r1 = gate.enter((p) => {
      pass = p;
      return first.promise;
    });
    let secondStarted = false;
    const r2 = gate.enter(async () => {
      secondStarted = true;
      return "second";
    });
    await tick();
    expect(secondStarted).to.equal(false);
    pass!.release();
    pass!.release(); // twice is once
    expect(await r2).to.equal("second");
    expect(gate.load.executing).to.equal(0);
    first.settle("first"); // settling after an early release frees nothing more
    expect(await r1).to.equal("first");
    expect(gate.load).to.deep.equal({ executing: 0, waiting: 0 });
  });

  it("a call open longer than the grace stops counting, and its settling later lets in no extra call", async () => {
    const gate = new IsolateCallGate(1, 200);
    const long = pending();
    const r1 = gate.enter(() => long.promise);
    const second = pending();
    const since = Date.now();
    let secondStarted!: () => void;
    const secondIn = new Promise<void>((resolve) => (secondStarted = resolve));
    const r2 = gate.enter(() => {
      secondStarted();
      return second.promise;
    });
    let thirdStarted = false;
    const r3 = gate.enter(async () => {
      thirdStarted = true;
      return "third";
    });
    // The gate's own timer lets the second in once the first has been open for the grace.
    await secondIn;
    expect(Date.now() - since).to.be.at.least(190);
    long.settle("long");
    expect(await r1).to.equal("long");
    await tick();
    expect(thirdStarted, "the expired call's settling must not free the second's place").to.equal(false);
    second.settle("second");
    expect(await r2).to.equal("second");
    expect(await r3).to.equal("third");
  });

  it("a call that throws before it returns a promise frees its place", async () => {
    const gate = new IsolateCallGate(1, 60_000);
    let failed: unknown;
    await gate
      .enter(() => {
        throw new Error("released reference");
      })
      .catch((err) => (failed = err));
    expect((failed as Error).message).to.equal("released reference");
    expect(await gate.enter(async () => "next")).to.equal("next");
  });
});
