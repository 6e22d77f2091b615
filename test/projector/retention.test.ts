import { expect } from "chai";
import { Retention } from "../../src/projector/retention.js";
import { EmittedEventsReadModel } from "../../src/readModels/emittedEvents.js";
import { RunLogsReadModel } from "../../src/readModels/runLogs.js";
import { KEPT_EVENTS } from "../../projections/emittedEvents.js";
import { streams } from "../../commands/streams.js";
import { eventually } from "../harness/receiver.js";
import { openProjectedStore, type ProjectedStore } from "../harness/projectedStore.js";

// Retention over a real SQLite log, read-model file and projector. The read models are the real
// ones; the test only counts which emitters the sweeps asked about.
describe("retention", () => {
  let projected: ProjectedStore;
  let store: ProjectedStore["store"];
  let retention: Retention;
  const asked: string[] = [];

  beforeEach(async () => {
    projected = await openProjectedStore("hw-retention-");
    store = projected.store;
    const events = new EmittedEventsReadModel(projected.db);
    const runLogs = new RunLogsReadModel(projected.db);
    asked.length = 0;
    retention = new Retention(
      store,
      projected.projector,
      {
        events: {
          oldestKeptRevision: (id) => (asked.push(id), events.oldestKeptRevision(id)),
          fullEmitters: (limit) => events.fullEmitters(limit),
        },
        runLogs,
      },
      async () => Number.MAX_SAFE_INTEGER,
      () => false,
      20,
    );
    retention.start();
  });

  afterEach(async () => {
    await retention.stop();
    await projected.close();
  });

  const emitted = (emitterId: string, n: number) => ({
    type: "EventEmitted",
    data: {
      emitterId,
      id: `${1000 + n}-0`,
      channel: "",
      event: { n },
      summary: null,
      emitId: null,
      ts: null,
      indexedAtMs: n,
      invocationId: `inv_${n}`,
    },
  });

  async function emit(emitterId: string, from: number, count: number): Promise<void> {
    const events = Array.from({ length: count }, (_, i) => emitted(emitterId, from + i));
    await projected.append(streams.emitter(emitterId), events);
  }

  it("sweeps only streams that have held a full window: a young one is never asked about, a full one is cut to the window", async () => {
    await emit("dc_young", 0, KEPT_EVENTS - 1);
    await emit("dc_full", 0, KEPT_EVENTS);
    await emit("dc_full", KEPT_EVENTS, 20);
    await eventually(
      async () => {
        const kept = (await store.readStream(streams.emitter("dc_full"))).length;
        return kept === KEPT_EVENTS ? true : undefined;
      },
      5_000,
      "the full stream cut to its window",
    );
    // Sweeps run every 20 ms: give a few more the chance to ask about the young stream.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(asked).to.include("dc_full");
    expect(asked).to.not.include("dc_young");
    expect(await store.readStream(streams.emitter("dc_young"))).to.have.length(KEPT_EVENTS - 1);

    // One more event fills its window: from then on it is swept like any other.
    await emit("dc_young", KEPT_EVENTS - 1, 1);
    await eventually(async () => (asked.includes("dc_young") ? true : undefined), 5_000, "the filled stream asked about");
  });

  it("asks the store for a sweep's truncations all at once, so the store can write them as one commit", async () => {
    await retention.stop();
    const emitters = Array.from({ length: 12 }, (_, i) => `dc_full${i}`);
    for (const id of emitters) await emit(id, 0, KEPT_EVENTS + 5);
    let inFlight = 0;
    let most = 0;
    const counting = new Proxy(store, {
      get(target, key) {
        if (key === "truncateBefore") {
          return async (stream: string, before: number) => {
            most = Math.max(most, ++inFlight);
            try {
              await target.truncateBefore(stream, before);
            } finally {
              inFlight--;
            }
          };
        }
        const value = Reflect.get(target, key) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    // Started after the appends: its first sweep finds every stream full at once.
    retention = new Retention(
      counting,
      projected.projector,
      { events: new EmittedEventsReadModel(projected.db), runLogs: new RunLogsReadModel(projected.db) },
      async () => Number.MAX_SAFE_INTEGER,
      () => false,
      20,
    );
    retention.start();
    await eventually(
      async () => {
        const kept = await Promise.all(emitters.map(async (id) => (await store.readStream(streams.emitter(id))).length));
        return kept.every((n) => n === KEPT_EVENTS) ? true : undefined;
      },
      5_000,
      "every full stream cut to its window",
    );
    expect(most).to.equal(emitters.length);
  });
});
