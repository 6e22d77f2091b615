import { expect } from "chai";
import { KEPT_RUN_LOGS, runLogsProjection } from "../../projections/runLogs.js";
import type { EventByEventProjection } from "../../src/projector/projection.js";
import { RunLogsReadModel } from "../../src/readModels/runLogs.js";
import type { RecordedEvent } from "../../src/store/eventStore.js";
import { scratchReadModels, spreadId, walPagesPerCommit, type ScratchReadModels } from "./scratchReadModels.js";

// The run-logs read model over a real SQLite file: what a commit of a busy node's runs writes, and
// that every query still finds its rows in log order with one index per row.
describe("source_logs read model", () => {
  let scratch: ScratchReadModels;
  let position = 0;
  const projection = runLogsProjection as EventByEventProjection;

  const sourceId = (s: number) => spreadId("dc", s);

  /** A RunLogged of source `s` for `invocationId` at the next log position. */
  const logged = (s: number, invocationId: string): RecordedEvent => {
    position++;
    return {
      id: `ev-${position}`,
      type: "RunLogged",
      data: {
        sourceId: sourceId(s),
        invocationId,
        trigger: "http",
        userId: "u_1",
        startedMs: position,
        endedMs: position + 1,
        computeMs: 1,
        ok: true,
        lines: [{ ts: position, level: "info", message: `run ${invocationId}` }],
      },
      metadata: {},
      stream: `logs-${sourceId(s)}`,
      revision: position,
      position,
      created: 0,
    };
  };
  const apply = (events: RecordedEvent[]) =>
    scratch.db.transaction(() => {
      for (const event of events) projection.apply(scratch.db, event);
      projection.afterBatch?.(scratch.db);
    })();

  beforeEach(() => {
    scratch = scratchReadModels("logs", projection.schema);
    position = 0;
  });

  afterEach(() => scratch.close());

  it("a commit of one run each of 14 sources with full windows writes ~37 pages, not ~66 (one index per row)", () => {
    const SOURCES = 200;
    for (let round = 0; round < KEPT_RUN_LOGS; round++) apply(Array.from({ length: SOURCES }, (_, s) => logged(s, `inv_${round}_${s}`)));
    const framesPerCommit = walPagesPerCommit(scratch, 100, (c) =>
      apply(c < 0 ? [logged(0, "inv_first")] : Array.from({ length: 14 }, (_, i) => logged((c * 37 + i * 13) % SOURCES, `inv_c${c}_${i}`))),
    );
    // Keyed by (source_id, invocation_id) with a (source_id, seq) index beside it, each run of another
    // source dirtied a leaf of both (insert and trim): ~66 pages per commit here; one index: ~37.
    expect(framesPerCommit).to.be.above(20).and.below(52);
    const counts = scratch.db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM source_logs GROUP BY source_id").all();
    expect(counts.every(({ n }) => n === KEPT_RUN_LOGS)).to.equal(true);
  });

  it("keeps the first log of an invocation, lists and pages in log order, and places a $logs cursor", () => {
    const read = new RunLogsReadModel(scratch.db);
    const events: RecordedEvent[] = [];
    for (let i = 0; i < 150; i++) events.push(logged(i % 3, `inv_${i}`));
    apply(events);
    // The same invocation logged again (a paused source's redelivered record): the first stays.
    const again = logged(0, "inv_3");
    apply([again, ...events.slice(-5)]);
    const first = sourceId(0);
    expect(read.log(first, "inv_3")?.seq).to.equal(4);
    const page = read.logs(first, { limit: 10 });
    expect(page.total).to.equal(50);
    expect(page.rows.map((row) => row.invocationId)).to.deep.equal(Array.from({ length: 10 }, (_, k) => `inv_${147 - 3 * k}`));
    const next = read.logs(first, { limit: 10, after: page.rows[9].seq });
    expect(next.rows[0].invocationId).to.equal("inv_117");
    const back = read.logs(first, { limit: 3, before: next.rows[0].seq });
    expect(back.rows.map((row) => row.invocationId)).to.deep.equal(["inv_126", "inv_123", "inv_120"]);
    expect(read.cursorOf(first, "inv_3")).to.equal(4);
    expect(read.logsAfter(first, 4, 3).map((row) => row.invocationId)).to.deep.equal(["inv_6", "inv_9", "inv_12"]);
    // The window keeps the newest 100 by log position.
    apply(Array.from({ length: 60 }, (_, k) => logged(0, `inv_more_${k}`)));
    expect(read.logs(first, { limit: 100 }).total).to.equal(KEPT_RUN_LOGS);
    expect(read.log(first, "inv_3")).to.equal(undefined);
    expect(read.log(first, "inv_147")?.invocationId).to.equal("inv_147");
    expect(read.log(first, "inv_27")).to.equal(undefined);
  });
});
