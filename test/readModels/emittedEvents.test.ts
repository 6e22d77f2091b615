import { expect } from "chai";
import { emittedEventsProjection, KEPT_EVENTS } from "../../projections/emittedEvents.js";
import { EmittedEventsReadModel } from "../../src/readModels/emittedEvents.js";
import type { RecordedEvent } from "../../src/store/eventStore.js";
import { scratchReadModels, spreadId, walPagesPerCommit, type ScratchReadModels } from "./scratchReadModels.js";

// The emitted-events read model over a real SQLite file: what a commit of a busy node's runs
// writes, and that every query still finds its rows with the row keyed by its log position.
describe("emitted_events read model", () => {
  let scratch: ScratchReadModels;
  let position = 0;
  const emitted = new Map<string, number>();

  const emitterId = (e: number) => spreadId("dc", e);

  /** The next EventEmitted of emitter `e` (ids increase per emitter, as the emitter mints them). */
  const emit = (e: number): RecordedEvent => {
    const k = emitted.get(emitterId(e)) ?? 0;
    emitted.set(emitterId(e), k + 1);
    position++;
    return {
      id: `ev-${position}`,
      type: "EventEmitted",
      data: {
        emitterId: emitterId(e),
        id: `${1_700_000_000_000 + k}-0`,
        channel: "",
        event: { hello: "world", n: k },
        summary: "summary",
        ts: 1_700_000_000_000 + k,
        indexedAtMs: 1_700_000_000_000 + k,
        invocationId: `inv_${position}`,
      },
      metadata: {},
      stream: `emitter-${emitterId(e)}`,
      revision: k,
      position,
      created: 0,
    };
  };
  const apply = (events: RecordedEvent[]) => scratch.db.transaction(() => emittedEventsProjection.applyBatch(scratch.db, events))();

  beforeEach(() => {
    scratch = scratchReadModels("emitted", emittedEventsProjection.schema);
    position = 0;
    emitted.clear();
  });

  afterEach(() => scratch.close());

  it("a commit of one run each of 14 sources with full windows writes ~40 pages, not ~70 (one index per row)", () => {
    const EMITTERS = 200;
    for (let round = 0; round < KEPT_EVENTS; round++) apply(Array.from({ length: EMITTERS }, (_, e) => emit(e)));
    const framesPerCommit = walPagesPerCommit(scratch, 100, (c) =>
      apply(c < 0 ? [emit(0)] : Array.from({ length: 14 }, (_, i) => emit((c * 37 + i * 13) % EMITTERS))),
    );
    // Keyed by (emitter_id, id) besides (emitter_id, seq), each run of another source dirtied a leaf
    // of both indexes (insert and trim): ~70 pages per commit here; one index: ~42.
    expect(framesPerCommit).to.be.above(20).and.below(56);
    // Every window still holds exactly the newest 100.
    const counts = scratch.db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM emitted_events GROUP BY emitter_id").all();
    expect(counts.every(({ n }) => n === KEPT_EVENTS)).to.equal(true);
  });

  it("finds an event by its id, lists and pages by log position, and places an SSE cursor, with the row keyed by its position", () => {
    const read = new EmittedEventsReadModel(scratch.db);
    const events: RecordedEvent[] = [];
    for (let i = 0; i < 150; i++) events.push(emit(i % 3));
    apply(events);
    // Replaying an applied position writes nothing twice.
    apply(events.slice(-5));
    const first = emitterId(0);
    const page = read.events(first, { limit: 10 });
    expect(page.total).to.equal(50);
    const seqs = page.rows.map((row) => row.seq);
    expect(seqs).to.deep.equal([...seqs].sort((a, b) => b - a));
    expect(page.rows[0].id).to.equal(`${1_700_000_000_000 + 49}-0`);
    const next = read.events(first, { limit: 10, after: seqs[seqs.length - 1] });
    expect(next.rows[0].seq).to.be.below(seqs[seqs.length - 1]);
    const one = read.event(first, `${1_700_000_000_000 + 7}-0`);
    expect(one?.event).to.deep.equal({ hello: "world", n: 7 });
    expect(read.event(first, `${1_700_000_000_000 + 70}-0`)).to.equal(undefined);
    expect(read.cursorOf(first, `${1_700_000_000_000 + 7}-0`)).to.equal(one!.seq);
    expect(read.eventsAfter(first, one!.seq, undefined, 3).map((e) => e.id)).to.deep.equal(
      [8, 9, 10].map((k) => `${1_700_000_000_000 + k}-0`),
    );
  });
});
