// The per-key dispatcher both adapters use for keyed consumption: ordering, batching, bounds,
// retries, and the contiguous-prefix commit, driven directly with records and a recording commit.
import { expect } from "chai";
import { keyedDefaults, type BusLogEntry, type BusRecord, type OutgoingMessage, type ResolvedKeyedOptions } from "../../src/bus/bus.js";
import { KeyedDispatcher, type KeyedDispatcherOptions } from "../../src/bus/keyedDispatcher.js";

function record(offset: number, key: string, value = `${key}@${offset}`): BusRecord {
  return { topic: "t", partition: 0, offset: String(offset), key, value: Buffer.from(value), headers: {}, timestamp: 0 };
}

/** A message handed over in this process, not read from the partition (Bus.offerLocally). */
function local(key: string, value = `${key}@local`): OutgoingMessage {
  return { key, value };
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(2);
  }
}

/** A dispatcher whose handler records every call and waits for the test to settle it. */
class Harness {
  readonly calls: {
    key: string;
    offsets: number[];
    done: ReturnType<typeof deferred>;
    more: () => BusRecord[];
    arrived: () => Promise<void>;
  }[] = [];
  readonly commits: bigint[] = [];
  readonly logged: BusLogEntry[] = [];
  capacityCalls = 0;
  commitFails = 0;
  readonly dispatcher: KeyedDispatcher;

  constructor(keyed: Partial<Omit<ResolvedKeyedOptions, "handler">> = {}, extra: Partial<KeyedDispatcherOptions> = {}) {
    this.dispatcher = new KeyedDispatcher({
      groupId: "g",
      topic: "t",
      partition: 0,
      keyed: {
        ...keyedDefaults,
        ...keyed,
        handler: (records, more, arrived) => {
          const done = deferred();
          this.calls.push({ key: records[0].key, offsets: records.map((r) => Number(r.offset)), done, more, arrived });
          return done.promise;
        },
      },
      retry: { initialMs: 10, maxMs: 20 },
      log: (entry) => this.logged.push(entry),
      commit: async (offset) => {
        if (this.commitFails > 0) {
          this.commitFails--;
          throw new Error("coordinator moved");
        }
        this.commits.push(offset);
      },
      onCapacity: () => this.capacityCalls++,
      ...extra,
    });
  }

  callsOf(key: string): number[][] {
    return this.calls.filter((call) => call.key === key).map((call) => call.offsets);
  }

  running(key: string): Harness["calls"][number] {
    const open = this.calls.filter((call) => call.key === key);
    return open[open.length - 1];
  }
}

describe("keyed dispatcher", () => {
  it("starts a key at once while another key of the partition never settles, keeping each key's order", async () => {
    const h = new Harness();
    h.dispatcher.offer([record(0, "a"), record(1, "b"), record(2, "a"), record(3, "b")]);
    await until(() => h.calls.length === 2, "first calls of a and b");
    expect(h.callsOf("a")).to.deep.equal([[0, 2]]);
    expect(h.callsOf("b")).to.deep.equal([[1, 3]]);
    h.running("b").done.resolve();
    h.dispatcher.offer([record(4, "b"), record(5, "a")]);
    await until(() => h.callsOf("b").length === 2, "b's next call");
    expect(h.callsOf("b")[1]).to.deep.equal([4]);
    // a is still running: its new record waits for that call.
    expect(h.callsOf("a")).to.have.length(1);
    h.dispatcher.abandon();
  });

  it("hands over every record that waited for a key's running call as the next batches, at most maxBatch each", async () => {
    const h = new Harness({ maxBatch: 4 });
    h.dispatcher.offer([record(0, "a")]);
    await until(() => h.calls.length === 1, "first call");
    h.dispatcher.offer(Array.from({ length: 10 }, (_, i) => record(i + 1, "a")));
    await pause(20);
    expect(h.calls).to.have.length(1);
    h.running("a").done.resolve();
    await until(() => h.calls.length === 2, "second call");
    h.running("a").done.resolve();
    await until(() => h.calls.length === 3, "third call");
    h.running("a").done.resolve();
    await until(() => h.calls.length === 4, "fourth call");
    h.running("a").done.resolve();
    expect(h.callsOf("a")).to.deep.equal([[0], [1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]);
    await until(() => h.commits.at(-1) === 11n, "commit of everything");
  });

  it("commits only the contiguous completed prefix, coalescing completions into few commits", async () => {
    const h = new Harness({}, { start: 0n });
    h.dispatcher.offer([record(0, "a"), ...Array.from({ length: 20 }, (_, i) => record(i + 1, `k${i}`))]);
    await until(() => h.calls.length === 21, "all keys started");
    for (const call of h.calls.slice(1)) call.done.resolve();
    await pause(30);
    expect(h.commits, "nothing is committable while offset 0 runs").to.deep.equal([]);
    expect(h.dispatcher.committable).to.equal(0n);
    h.running("a").done.resolve();
    await until(() => h.commits.length > 0, "a commit");
    await pause(20);
    expect(h.commits).to.deep.equal([21n]);
    expect(h.dispatcher.pending).to.equal(0);
  });

  it("commits up to the oldest unfinished record as completions come in", async () => {
    const h = new Harness({}, { start: 5n });
    h.dispatcher.offer([record(5, "a"), record(6, "b"), record(7, "c")]);
    await until(() => h.calls.length === 3, "three calls");
    h.running("a").done.resolve();
    await until(() => h.commits.length === 1, "first commit");
    expect(h.commits).to.deep.equal([6n]);
    h.running("c").done.resolve();
    await pause(20);
    expect(h.commits).to.deep.equal([6n]);
    h.running("b").done.resolve();
    await until(() => h.commits.length === 2, "second commit");
    expect(h.commits).to.deep.equal([6n, 8n]);
  });

  it("stops taking records at maxPendingPerPartition and asks for more once the prefix moves", async () => {
    const h = new Harness({ maxPendingPerPartition: 4 });
    const records = Array.from({ length: 10 }, (_, i) => record(i, `k${i}`));
    expect(h.dispatcher.offer(records)).to.equal(4);
    expect(h.dispatcher.paused).to.equal(true);
    expect(h.dispatcher.room).to.equal(0);
    expect(h.dispatcher.position).to.equal(4n);
    await until(() => h.calls.length === 4, "four calls");
    // Finishing a later record does not free room: the oldest one still holds the commit back.
    h.running("k3").done.resolve();
    await pause(20);
    expect(h.capacityCalls).to.equal(0);
    h.running("k0").done.resolve();
    await until(() => h.capacityCalls === 1, "onCapacity");
    expect(h.dispatcher.paused).to.equal(false);
    expect(h.dispatcher.room).to.equal(1);
    expect(h.dispatcher.offer(records.slice(4))).to.equal(1);
    expect(h.calls.length).to.be.at.most(5);
  });

  it("bounds the bytes held, but always takes one record into an empty dispatcher", () => {
    const h = new Harness({ maxPendingBytesPerPartition: 100 });
    const big = (offset: number, key: string) => record(offset, key, "x".repeat(40));
    expect(h.dispatcher.offer([big(0, "a"), big(1, "b"), big(2, "c")])).to.equal(2);
    expect(h.dispatcher.pendingBytes).to.equal(80);
    expect(h.dispatcher.paused).to.equal(true);
    const alone = new Harness({ maxPendingBytesPerPartition: 10 });
    expect(alone.dispatcher.offer([big(0, "a"), big(1, "b")])).to.equal(1);
    h.dispatcher.abandon();
    alone.dispatcher.abandon();
  });

  it("skips records below its position (a re-fetch of what it holds) and moves to endOffset when it took everything", async () => {
    const h = new Harness();
    expect(h.dispatcher.offer([record(10, "a"), record(11, "a")], 13n)).to.equal(2);
    expect(h.dispatcher.position).to.equal(13n);
    expect(h.dispatcher.offer([record(10, "a"), record(11, "a"), record(13, "a")])).to.equal(3);
    await until(() => h.calls.length === 1, "first call");
    h.running("a").done.resolve();
    await until(() => h.calls.length === 2, "second call");
    expect(h.callsOf("a")).to.deep.equal([[10, 11], [13]]);
    h.running("a").done.resolve();
    await until(() => h.commits.length > 0 && h.commits.at(-1) === 14n, "commit past 13");
  });

  it("retries a rejected batch with the same records while other keys go on, logging each failure", async () => {
    const h = new Harness();
    h.dispatcher.offer([record(0, "a"), record(1, "a"), record(2, "b")]);
    await until(() => h.calls.length === 2, "a and b");
    h.running("a").done.reject(new Error("503"));
    h.running("b").done.resolve();
    h.dispatcher.offer([record(3, "b")]);
    await until(() => h.callsOf("b").length === 2, "b goes on");
    await until(() => h.callsOf("a").length === 2, "a's retry");
    expect(h.callsOf("a")).to.deep.equal([
      [0, 1],
      [0, 1],
    ]);
    const failures = h.logged.filter((entry) => entry.level === "error");
    expect(failures).to.have.length(1);
    expect((failures[0].error as Error).message).to.equal("503");
    expect(failures[0].fields).to.include({ offset: "0", records: 2, key: "a", attempt: 1 });
    h.running("a").done.resolve();
    h.running("b").done.resolve();
    await until(() => h.commits.at(-1) === 4n, "commit of all");
  });

  it("more() hands a running call the records of its key that arrived since; they are done, or retried, with that call", async () => {
    const h = new Harness({ maxBatch: 2 });
    h.dispatcher.offer([record(0, "a"), record(1, "b")]);
    await until(() => h.calls.length === 2, "a and b");
    h.dispatcher.offer([record(2, "a"), record(3, "a"), record(4, "a"), record(5, "b")]);
    const offsets = (records: BusRecord[]) => records.map((r) => Number(r.offset));
    // At most maxBatch per pull, in offset order, only of the call's own key.
    expect(offsets(h.running("a").more())).to.deep.equal([2, 3]);
    expect(offsets(h.running("a").more())).to.deep.equal([4]);
    expect(h.running("a").more()).to.deep.equal([]);
    // The call fails: its retry hands over everything it had taken.
    h.running("a").done.reject(new Error("down"));
    await until(() => h.callsOf("a").length === 2, "a's retry");
    expect(h.callsOf("a")).to.deep.equal([[0], [0, 2, 3, 4]]);
    h.running("a").done.resolve();
    // b's 1 still runs, so nothing of a can be committed past it yet.
    await pause(20);
    expect(Number(h.commits.at(-1) ?? 0n)).to.be.below(2);
    h.running("b").done.resolve();
    await until(() => h.callsOf("b").length === 2, "b's next call");
    expect(h.callsOf("b")).to.deep.equal([[1], [5]]);
    h.running("b").done.resolve();
    await until(() => h.commits.at(-1) === 6n, "commit of all");
  });

  it("arrived() wakes a running call when records of its key come (not another key's), at once when some wait, and at stop", async () => {
    const h = new Harness();
    h.dispatcher.offer([record(0, "a"), record(1, "b")]);
    await until(() => h.calls.length === 2, "a and b");
    let woken = 0;
    const waiting = h
      .running("a")
      .arrived()
      .then(() => woken++);
    h.dispatcher.offer([record(2, "b")]);
    await pause(20);
    expect(woken, "b's record does not wake a's call").to.equal(0);
    h.dispatcher.offer([record(3, "a")]);
    await waiting;
    expect(woken).to.equal(1);
    // Records wait: it resolves at once, until more() has taken them.
    await h.running("a").arrived();
    expect(
      h
        .running("a")
        .more()
        .map((r) => Number(r.offset)),
    ).to.deep.equal([3]);
    let late = false;
    const again = h
      .running("a")
      .arrived()
      .then(() => (late = true));
    await pause(20);
    expect(late, "nothing new for a").to.equal(false);
    // Stopping wakes the waiting call, which then finds nothing more and ends.
    const stopping = h.dispatcher.stop();
    await again;
    expect(h.running("a").more()).to.deep.equal([]);
    h.running("a").done.resolve();
    h.running("b").done.resolve();
    await stopping;
  });

  it("stop() starts nothing new, waits for running calls, commits what completed and gives up a retry wait", async () => {
    const h = new Harness({}, { retry: { initialMs: 60_000, maxMs: 60_000 } });
    h.dispatcher.offer([record(0, "a"), record(1, "b"), record(2, "c")]);
    await until(() => h.calls.length === 3, "three calls");
    h.running("c").done.reject(new Error("down"));
    await until(() => h.logged.length === 1, "c failed");
    h.dispatcher.offer([record(3, "a")]);
    let stopped = false;
    const stopping = h.dispatcher.stop().then(() => (stopped = true));
    h.running("a").done.resolve();
    await pause(20);
    expect(stopped, "stop waits for b").to.equal(false);
    h.running("b").done.resolve();
    await stopping;
    // Offset 3 waited behind a's call and is not started after the stop; c gave up at its retry wait.
    expect(h.callsOf("a")).to.deep.equal([[0]]);
    expect(h.callsOf("c")).to.deep.equal([[2]]);
    expect(h.commits.at(-1)).to.equal(2n);
    expect(h.dispatcher.offer([record(4, "d")])).to.equal(0);
  });

  it("abandon() commits nothing more, and a successor's busy keys wait for the abandoned calls", async () => {
    const h = new Harness({}, { start: 0n });
    h.dispatcher.offer([record(0, "a"), record(1, "b")]);
    await until(() => h.calls.length === 2, "two calls");
    const busy = h.dispatcher.busyKeys();
    expect([...busy.keys()].sort()).to.deep.equal(["a", "b"]);
    h.dispatcher.abandon();
    h.running("a").done.resolve();
    await pause(20);
    expect(h.commits).to.deep.equal([]);
    await h.dispatcher.stop();

    const next = new Harness({}, { start: 0n, busyKeys: busy });
    next.dispatcher.offer([record(0, "a"), record(1, "b"), record(2, "c")]);
    await until(() => next.calls.length === 2, "a (its old call settled) and c");
    expect(next.calls.map((call) => call.key).sort()).to.deep.equal(["a", "c"]);
    h.running("b").done.resolve();
    await until(() => next.calls.length === 3, "b once its old call settled");
    next.dispatcher.abandon();
  });

  it("a local record joins its key's queue behind what was read, runs with the key's calls, and is no part of the commits", async () => {
    const h = new Harness({}, { start: 0n });
    h.dispatcher.offer([record(0, "a")]);
    await until(() => h.calls.length === 1, "a's first call");
    expect(h.dispatcher.offerLocal(local("a"), () => expect.fail("no fallback for a record that ran"))).to.equal(true);
    h.dispatcher.offer([record(1, "a")]);
    // Queued while a's call runs: the local record first (it came first), then offset 1.
    h.running("a").done.resolve();
    await until(() => h.calls.length === 2, "a's second call");
    expect(h.callsOf("a")).to.deep.equal([[0], [-1, 1]]);
    expect(h.dispatcher.pending, "only offset 1 is held for the commit").to.equal(1);
    expect(h.dispatcher.backlog.records, "the backlog counts both").to.equal(2);
    h.running("a").done.resolve();
    await until(() => h.commits.at(-1) === 2n, "the commit past offset 1");
    // A key with nothing read starts at once on a local record; its completion commits nothing.
    const commits = h.commits.length;
    h.dispatcher.offerLocal(local("b"), () => expect.fail("no fallback for a record that ran"));
    await until(() => h.callsOf("b").length === 1, "b's call");
    expect(h.calls.at(-1)!.offsets).to.deep.equal([-1]);
    h.running("b").done.resolve();
    await pause(30);
    expect(h.commits).to.have.length(commits);
    await h.dispatcher.stop();
  });

  it("a local record not done when the dispatcher stops goes back by its fallback, also out of a failed call; after abandon() one not yet in a call", async () => {
    const h = new Harness({}, { start: 0n, retry: { initialMs: 60_000, maxMs: 60_000 } });
    const fellBack: string[] = [];
    h.dispatcher.offer([record(0, "a")]);
    await until(() => h.calls.length === 1, "a's call");
    h.dispatcher.offerLocal(local("a", "waiting"), () => fellBack.push("waiting"));
    h.dispatcher.offerLocal(local("c", "failed"), () => fellBack.push("failed"));
    await until(() => h.callsOf("c").length === 1, "c's call");
    h.running("c").done.reject(new Error("down"));
    await until(() => h.logged.length === 1, "c failed");
    expect(h.logged[0].message).to.include("@local");
    const stopping = h.dispatcher.stop();
    h.running("a").done.resolve();
    await stopping;
    expect(fellBack.sort()).to.deep.equal(["failed", "waiting"]);
    expect(h.callsOf("a"), "the waiting one did not run").to.deep.equal([[0]]);
    expect(
      h.dispatcher.offerLocal(local("a"), () => fellBack.push("late")),
      "a stopped dispatcher takes none",
    ).to.equal(false);
    expect(fellBack).to.have.length(2);

    // Abandoned (the partition was taken away): what waited goes back; what a call holds is the call's to answer.
    const revoked = new Harness({}, { start: 0n });
    revoked.dispatcher.offerLocal(local("b", "in a call"), () => fellBack.push("in a call"));
    await until(() => revoked.calls.length === 1, "b's call");
    revoked.dispatcher.offerLocal(local("b", "behind it"), () => fellBack.push("behind it"));
    revoked.dispatcher.abandon();
    expect(fellBack.slice(2)).to.deep.equal(["behind it"]);
    revoked.running("b").done.resolve();
    await revoked.dispatcher.stop();
    expect(fellBack.slice(2), "nothing more at the stop").to.deep.equal(["behind it"]);
    expect(revoked.calls, "the waiting one did not run here").to.have.length(1);
  });

  it("tries a failed commit again", async () => {
    const h = new Harness({}, { start: 0n });
    h.commitFails = 2;
    h.dispatcher.offer([record(0, "a")]);
    await until(() => h.calls.length === 1, "call");
    h.running("a").done.resolve();
    await until(() => h.commits.length === 1, "commit after two failures");
    expect(h.commits).to.deep.equal([1n]);
    expect(h.logged.filter((entry) => entry.level === "warn")).to.have.length(2);
  });
});
