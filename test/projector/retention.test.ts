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
});
