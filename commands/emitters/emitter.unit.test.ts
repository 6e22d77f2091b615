import { expect } from "chai";
import {
  EARLIER_PARTITIONS,
  RECENT_INVOCATIONS,
  alreadyRecorded,
  stateFromLog,
  deleteEvents,
  emptyRuntimeState,
  recordRun,
  recordRuns,
  stateOf,
  type EmitterRuntimeState,
  type RunRecorded,
  type EventEmitted,
  type RecordRun,
} from "./emitter.js";
import { DomainError } from "../decider.js";

const run = (overrides: Partial<RecordRun>): RecordRun => ({
  emitterId: "dc_1",
  invocationId: "inv_1",
  strategy: undefined,
  emits: [],
  db: {},
  dbChanged: false,
  startedMs: 1000,
  nowMs: 2000,
  ...overrides,
});

describe("commands/emitters", () => {
  it("records emits with fresh ids, channels and the state after them, in one append", () => {
    const d = recordRun(
      run({
        strategy: "unique",
        emits: [
          { event: { a: 1 }, meta: { id: "x", summary: "first" } },
          { event: 2, meta: { id: "y", name: "alerts" } },
        ],
      }),
      emptyRuntimeState,
    );
    expect(d.kind).to.equal("emits");
    if (d.kind !== "emits") return;
    expect(d.emitted.map((e: EventEmitted) => [e.data.id, e.data.channel, e.data.summary])).to.deep.equal([
      ["2000-0", "", "first"],
      ["2000-1", "alerts", null],
    ]);
    const recorded = d.events[d.events.length - 1];
    expect(recorded.type).to.equal("RunRecorded");
    expect(recorded.data).to.deep.include({ lastEventId: "2000-1", recentInvocations: ["inv_1"], dedupe: { unique: ["x", "y"] } });
  });

  it("a redelivered invocation records nothing", () => {
    const state = { ...emptyRuntimeState, recentInvocations: ["inv_1"] };
    expect(recordRun(run({ emits: [{ event: 1, meta: {} }] }), state)).to.deep.equal({ kind: "duplicate" });
  });

  it("a redelivery from far behind the recent ids is told by its bus record; a bus started again from zero is not", () => {
    // Recorded RECENT_INVOCATIONS + 10 invocations that came over partition 3 (offsets 100.., appended at 5000..).
    let state: EmitterRuntimeState = emptyRuntimeState;
    for (let i = 0; i < RECENT_INVOCATIONS + 10; i++) {
      const d = recordRun(
        run({
          invocationId: `inv_${i}`,
          emits: [{ event: i, meta: {} }],
          delivery: { partition: 3, offset: String(100 + i), timestamp: 5000 + i },
        }),
        state,
      );
      if (d.kind === "duplicate") throw new Error(`inv_${i} taken for a duplicate`);
      state = stateOf(d.events[d.events.length - 1].data as RunRecorded["data"]);
    }
    expect(state.recentInvocations).to.not.include("inv_0");
    expect(state.lastDelivery).to.deep.equal({
      partition: 3,
      offset: String(100 + RECENT_INVOCATIONS + 9),
      timestamp: 5000 + RECENT_INVOCATIONS + 9,
    });
    const again = (delivery: { partition: number; offset: string; timestamp: number }, invocationId = "inv_0") =>
      recordRun(run({ invocationId, emits: [{ event: 0, meta: {} }], delivery }), state).kind;
    // The first invocation again, redelivered after a crash behind a slow run: not run twice.
    expect(again({ partition: 3, offset: "100", timestamp: 5000 })).to.equal("duplicate");
    // A new record past the last one runs.
    expect(again({ partition: 3, offset: "1000", timestamp: 9000 }, "inv_new")).to.equal("emits");
    // Offsets started again from zero (the topic was recreated): newer records at low offsets run.
    expect(again({ partition: 3, offset: "0", timestamp: 9000 }, "inv_new")).to.equal("emits");
    // Another partition (the topic was repartitioned): only the ids count.
    expect(again({ partition: 4, offset: "1", timestamp: 1 }, "inv_new")).to.equal("emits");
    // A run that did not come over the bus keeps the last delivery.
    const hook = recordRun(run({ invocationId: "inv_hook", db: { a: 1 }, dbChanged: true }), state);
    if (hook.kind === "duplicate") throw new Error("hook taken for a duplicate");
    expect((hook.events.at(-1)!.data as RunRecorded["data"]).lastDelivery).to.deep.equal(state.lastDelivery);
  });

  describe("ids minted for one bus record (uniqueToRecord) and the deliveries that tell their redeliveries", () => {
    type Bus = { partition: number; offset: string; timestamp: number };
    const on = (partition: number, offset: number, timestamp: number): Bus => ({ partition, offset: String(offset), timestamp });
    /** A run that emits its id, over `delivery` when given. */
    const command = (id: string, delivery: Bus | undefined, unique: boolean | undefined) =>
      run({
        invocationId: id,
        emits: [{ event: id, meta: {} }],
        ...(delivery ? { delivery } : {}),
        ...(unique ? { uniqueToRecord: true } : {}),
      });
    /** Records runs in order, as separate batches, failing on any taken for a duplicate. */
    const recordAll = (runs: { id: string; delivery?: Bus; unique?: boolean }[], from: EmitterRuntimeState = emptyRuntimeState) =>
      runs.reduce((state, { id, delivery, unique }) => {
        const d = recordRun(command(id, delivery, unique), state);
        if (d.kind === "duplicate") throw new Error(`${id} taken for a duplicate`);
        return stateOf(d.events[d.events.length - 1].data as RunRecorded["data"]);
      }, from);
    const kind = (state: EmitterRuntimeState, id: string, delivery?: Bus, unique = true) =>
      recordRun(command(id, delivery, unique), state).kind;

    it("are not kept in the window, and their redeliveries are still duplicates", () => {
      const state = recordAll(
        Array.from({ length: 300 }, (_, i) => ({ id: `inv_${i}`, delivery: on(3, 100 + i, 5000 + i), unique: true })),
      );
      expect(state.recentInvocations).to.deep.equal([]);
      for (const i of [0, 150, 299]) expect(kind(state, `inv_${i}`, on(3, 100 + i, 5000 + i))).to.equal("duplicate");
      expect(kind(state, "inv_next", on(3, 400, 5300))).to.equal("emits");
    });

    it("an id that can come again in another record (a timer tick, a routed event) is kept, and its copy at a later offset is a duplicate", () => {
      const state = recordAll([
        { id: "inv_dc_1_60000", delivery: on(3, 10, 100) },
        { id: "inv_http", delivery: on(3, 11, 101), unique: true },
      ]);
      expect(state.recentInvocations).to.deep.equal(["inv_dc_1_60000"]);
      // The second scheduler node's copy of the tick, queued after both.
      expect(kind(state, "inv_dc_1_60000", on(3, 12, 102), false)).to.equal("duplicate");
      // An invocation that came without a bus record is kept too.
      expect(recordAll([{ id: "inv_hook" }], state).recentInvocations).to.deep.equal(["inv_dc_1_60000", "inv_hook"]);
    });

    it("an invocation handed over in the runner's own process (local, no bus record) is not kept, and leaves the deliveries as they were", () => {
      const state = recordAll([
        { id: "inv_a", delivery: on(3, 10, 100), unique: true },
        { id: "inv_dc_1_60000", delivery: on(3, 11, 101) },
      ]);
      const d = recordRun(run({ invocationId: "inv_local", emits: [{ event: "x", meta: {} }], uniqueToRecord: true, local: true }), state);
      if (d.kind !== "emits") expect.fail(`recorded as ${d.kind}`);
      const after = stateOf(d.events[d.events.length - 1].data as RunRecorded["data"]);
      expect(after.recentInvocations).to.deep.equal(["inv_dc_1_60000"]);
      expect(after.lastDelivery).to.deep.equal(on(3, 11, 101));
      expect(kind(after, "inv_a", on(3, 10, 100))).to.equal("duplicate");
    });

    it("producers whose clocks disagree: a redelivered record appended 'later' than the last recorded one is still a duplicate", () => {
      // Offsets go up; the second producer's clock is a minute behind the first's.
      const state = recordAll([
        { id: "inv_a", delivery: on(3, 10, 60_000), unique: true },
        { id: "inv_b", delivery: on(3, 11, 1_000), unique: true },
        { id: "inv_c", delivery: on(3, 12, 2_000), unique: true },
      ]);
      expect(state.lastDelivery).to.deep.equal(on(3, 12, 60_000));
      expect(kind(state, "inv_a", on(3, 10, 60_000))).to.equal("duplicate");
      expect(kind(state, "inv_b", on(3, 11, 1_000))).to.equal("duplicate");
      // A new record from the slow clock, past the last offset, runs.
      expect(kind(state, "inv_d", on(3, 13, 3_000))).to.equal("emits");
      // Offsets started again from zero: a record newer than any recorded runs, and is then told apart.
      const reset = recordAll([{ id: "inv_e", delivery: on(3, 0, 70_000), unique: true }], state);
      expect(reset.lastDelivery).to.deep.equal(on(3, 0, 70_000));
      expect(kind(reset, "inv_e", on(3, 0, 70_000))).to.equal("duplicate");
      expect(kind(reset, "inv_f", on(3, 1, 70_001))).to.equal("emits");
    });

    it("a repartitioned topic: redeliveries on the partition the emitter's records came over before are still duplicates", () => {
      const state = recordAll([
        { id: "inv_a", delivery: on(3, 10, 100), unique: true },
        { id: "inv_b", delivery: on(3, 11, 101), unique: true },
        { id: "inv_c", delivery: on(7, 2, 102), unique: true },
        { id: "inv_d", delivery: on(7, 3, 103), unique: true },
      ]);
      expect(state.lastDelivery).to.deep.equal(on(7, 3, 103));
      expect(state.earlierDeliveries).to.deep.equal([on(3, 11, 101)]);
      expect(kind(state, "inv_a", on(3, 10, 100))).to.equal("duplicate");
      expect(kind(state, "inv_c", on(7, 2, 102))).to.equal("duplicate");
      expect(kind(state, "inv_new", on(3, 12, 104))).to.equal("emits");
      // Back to partition 3: partition 7 becomes an earlier one, and is still told.
      const back = recordAll([{ id: "inv_e", delivery: on(3, 12, 104), unique: true }], state);
      expect(back.lastDelivery).to.deep.equal(on(3, 12, 104));
      expect(back.earlierDeliveries).to.deep.equal([on(7, 3, 103)]);
      expect(kind(back, "inv_d", on(7, 3, 103))).to.equal("duplicate");
      // At most EARLIER_PARTITIONS earlier partitions are kept, the most recent ones.
      const many = recordAll(
        Array.from({ length: EARLIER_PARTITIONS + 5 }, (_, p) => ({ id: `inv_p${p}`, delivery: on(100 + p, 1, 200 + p), unique: true })),
        back,
      );
      expect(many.earlierDeliveries).to.have.length(EARLIER_PARTITIONS);
      expect(many.earlierDeliveries![0]).to.deep.equal(on(100 + EARLIER_PARTITIONS + 3, 1, 200 + EARLIER_PARTITIONS + 3));
    });

    it("a state recorded before: minted ids in its window are dropped when it has a last delivery; derived ids are kept", () => {
      const old = {
        emitterId: "dc_1",
        invocationId: "inv_0123456789abcdef",
        at: 5,
        dedupe: {},
        db: {},
        lastEventId: null,
        recentInvocations: ["inv_0123456789abcdef", "inv_dc_1_60000", "inv_abcdefghijklmnop"],
        lastDelivery: on(3, 10, 100),
      };
      expect(stateFromLog(old).recentInvocations).to.deep.equal(["inv_dc_1_60000"]);
      expect(alreadyRecorded(stateFromLog(old), "inv_0123456789abcdef", on(3, 9, 99))).to.equal(true);
      // Without a delivery the window is all there is: it is kept whole.
      const { lastDelivery: _unused, ...withoutDelivery } = old;
      expect(stateFromLog(withoutDelivery).recentInvocations).to.deep.equal(old.recentInvocations);
    });
  });

  it("a run that only changed the db writes only the state", () => {
    const d = recordRun(run({ db: { cursor: 5 }, dbChanged: true }), { ...emptyRuntimeState, lastEventId: "10-3" });
    expect(d.kind).to.equal("db");
    if (d.kind !== "db") return;
    expect(d.events[0].data).to.deep.include({ db: { cursor: 5 }, lastEventId: "10-3" });
  });

  it("a run whose emits were all duplicates still records its invocation (on the db stream)", () => {
    const state = { ...emptyRuntimeState, dedupe: { unique: ["x"] } };
    const d = recordRun(run({ strategy: "unique", emits: [{ event: 1, meta: { id: "x" } }] }), state);
    expect(d.kind).to.equal("db");
    if (d.kind !== "db") return;
    expect(d.events[0].data.recentInvocations).to.deep.equal(["inv_1"]);
  });

  it("errors are appended after deduplicated emits and are never deduplicated", () => {
    const state = { ...emptyRuntimeState, dedupe: { unique: ["x"] } };
    const d = recordRun(
      run({
        strategy: "unique",
        emits: [{ event: 1, meta: { id: "x" } }],
        unconditional: [{ event: { error: "boom" }, meta: { name: "$errors" } }],
      }),
      state,
    );
    if (d.kind !== "emits") throw new Error(d.kind);
    expect(d.emitted.map((e) => e.data.channel)).to.deep.equal(["$errors"]);
    expect(d.events[d.events.length - 1].data).to.deep.include({ dedupe: { unique: ["x"] } });
  });

  it("ids continue after the last one even when the clock is behind", () => {
    const d = recordRun(run({ emits: [{ event: 1, meta: {} }], nowMs: 5 }), { ...emptyRuntimeState, lastEventId: "100-7" });
    if (d.kind !== "emits") throw new Error(d.kind);
    expect(d.emitted[0].data.id).to.equal("100-8");
  });

  it("deletes events by the seed's rules: all, from start_id, up to end_id, an inclusive range; never a range that ends before it starts", () => {
    const del = (startId: string | null, endId: string | null) => deleteEvents({ emitterId: "dc_1", startId, endId, at: 5 });
    expect(del(null, null)[0].data).to.deep.equal({ emitterId: "dc_1", startId: null, endId: null, at: 5 });
    expect(del("10-1", "10-1")[0].data).to.include({ startId: "10-1", endId: "10-1" });
    expect(del("9-5", "10-0")[0].data).to.include({ startId: "9-5", endId: "10-0" });
    expect(() => del("10-2", "10-1")).to.throw(DomainError, /start_id is after end_id/);
    expect(() => del("nope", null)).to.throw(DomainError, /event ids/);
  });

  describe("a batch of runs (recordRuns)", () => {
    it("decides each run on the state the one before it left: dedupe, event ids and the invocation window go on", () => {
      const batch = recordRuns(
        [
          run({ invocationId: "inv_1", strategy: "unique", emits: [{ event: 1, meta: { id: "a" } }] }),
          run({
            invocationId: "inv_2",
            strategy: "unique",
            emits: [
              { event: 2, meta: { id: "a" } },
              { event: 3, meta: { id: "b" } },
            ],
          }),
          run({ invocationId: "inv_3", strategy: "unique", emits: [{ event: 4, meta: { id: "b" } }], db: { n: 3 }, dbChanged: true }),
        ],
        emptyRuntimeState,
      );
      expect(batch.decisions.map((d) => d.kind)).to.deep.equal(["emits", "emits", "db"]);
      // Every run's events, then one RunRecorded with the state after the last run.
      expect(batch.events.map((e) => e.type)).to.deep.equal(["EventEmitted", "EventEmitted", "RunRecorded"]);
      expect(batch.events.slice(0, 2).map((e) => (e as EventEmitted).data.event)).to.deep.equal([1, 3]);
      expect(batch.events.slice(0, 2).map((e) => (e as EventEmitted).data.id)).to.deep.equal(["2000-0", "2000-1"]);
      expect(batch.emitted).to.equal(true);
      expect(batch.state).to.deep.equal({
        dedupe: { unique: ["a", "b"] },
        db: { n: 3 },
        lastEventId: "2000-1",
        recentInvocations: ["inv_1", "inv_2", "inv_3"],
      });
      expect(batch.events.at(-1)!.data).to.deep.include({ invocationId: "inv_3", recentInvocations: ["inv_1", "inv_2", "inv_3"] });
    });

    it("a run already recorded, or twice in the batch, is a duplicate; a batch of duplicates appends nothing", () => {
      const first = recordRuns([run({ invocationId: "inv_1", emits: [{ event: 1, meta: {} }] })], emptyRuntimeState);
      const again = recordRuns(
        [run({ invocationId: "inv_1" }), run({ invocationId: "inv_2", emits: [{ event: 2, meta: {} }] }), run({ invocationId: "inv_2" })],
        first.state,
      );
      expect(again.decisions.map((d) => d.kind)).to.deep.equal(["duplicate", "emits", "duplicate"]);
      expect(recordRuns([run({ invocationId: "inv_1" })], first.state)).to.deep.include({ events: [], emitted: false });
    });

    it("runs that only changed this.db record their state alone (the db stream)", () => {
      const batch = recordRuns(
        [run({ invocationId: "inv_1", db: { n: 1 }, dbChanged: true }), run({ invocationId: "inv_2", db: { n: 2 }, dbChanged: true })],
        emptyRuntimeState,
      );
      expect(batch.emitted).to.equal(false);
      expect(batch.events.map((e) => e.type)).to.deep.equal(["RunRecorded"]);
      expect(batch.state.db).to.deep.equal({ n: 2 });
    });
  });
});
