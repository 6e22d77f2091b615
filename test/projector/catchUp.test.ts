import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "better-sqlite3";
import { Projector, rebuildProjections } from "../../src/projector/projector.js";
import type { Projection } from "../../src/projector/projection.js";
import { openReadModels } from "../../src/readModels/database.js";
import type { EventStore, RecordedEvent } from "../../src/store/eventStore.js";
import { openSqliteEventStore } from "../../src/store/sqlite/sqliteEventStore.js";

/** Blocks the thread for `ms`: a read model slow to write, as a large one on a slow disk is. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    /* spin */
  }
}

/** Counts the `Tick` events it has seen, spending `msPerEvent` on each. */
const slowTicks = (msPerEvent: number): Projection => ({
  name: "slow_ticks",
  version: 1,
  schema: ["CREATE TABLE IF NOT EXISTS slow_ticks (n INTEGER NOT NULL)"],
  tables: ["slow_ticks"],
  handles: new Set(["Tick"]),
  apply(db: Database, _event: RecordedEvent) {
    busy(msPerEvent);
    db.prepare("INSERT INTO slow_ticks (n) VALUES (1)").run();
  },
});

describe("projector: a whole catch-up waits as long as the read models move", function () {
  this.timeout(30_000);
  let dir: string;
  let store: EventStore;
  let db: Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "hw-catchup-"));
    store = openSqliteEventStore({ file: join(dir, "log.db") });
    for (let i = 0; i < 40; i++) await store.append(`ticks-${i}`, [{ type: "Tick", data: { i } }]);
    db = openReadModels(join(dir, "readmodels.db"));
  });

  afterEach(async () => {
    if (db.open) db.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("goes on past the stall limit while events are projected, and reports the position on the way", async () => {
    // 40 events at 25 ms each, one per batch: ~1 s in all, five times the stall limit.
    const projector = new Projector(store, db, [slowTicks(25)], 1);
    projector.start();
    const reported: number[] = [];
    const started = Date.now();
    try {
      await projector.catchUpWhileMoving({ stallMs: 200, reportEveryMs: 100, onProgress: (position) => reported.push(position) });
    } finally {
      await projector.stop();
    }
    expect(Date.now() - started).to.be.greaterThan(400);
    expect(projector.position).to.equal(await store.headPosition());
    expect(db.prepare("SELECT count(*) AS n FROM slow_ticks").get()).to.deep.equal({ n: 40 });
    expect(reported.length).to.be.greaterThan(1);
    expect(reported).to.deep.equal([...reported].sort((a, b) => a - b));
    expect(reported.every((position) => position < 40)).to.equal(true);
  });

  it("gives up when nothing is projected for the stall limit, naming where it stopped", async () => {
    // Never started: nothing will move.
    const projector = new Projector(store, db, [slowTicks(0)]);
    const started = Date.now();
    let failure: unknown;
    try {
      await projector.catchUpWhileMoving({ stallMs: 300, reportEveryMs: 100 });
    } catch (error) {
      failure = error;
    }
    expect(failure).to.be.instanceOf(Error);
    expect((failure as Error).message).to.equal("read models stopped at position 0 of 40: nothing projected for 300 ms");
    expect(Date.now() - started).to.be.at.least(300);
  });

  it("a rebuild longer than the stall limit completes, and reports its progress between its batches", async () => {
    // 6,040 events at 0.1 ms each, in batches of 3,000: ~0.6 s in all, past the stall limit.
    for (let i = 0; i < 6; i++) {
      await store.append(
        `more-${i}`,
        Array.from({ length: 1_000 }, (_, n) => ({ type: "Tick", data: { n } })),
      );
    }
    const reported: number[] = [];
    const position = await rebuildProjections(store, db, [slowTicks(0.1)], {
      stallMs: 450,
      reportEveryMs: 50,
      onProgress: (at) => reported.push(at),
    });
    expect(position).to.equal(6_040);
    expect(db.prepare("SELECT count(*) AS n FROM slow_ticks").get()).to.deep.equal({ n: 6_040 });
    expect(reported.length).to.be.greaterThan(0);
    expect(reported.every((at) => at < 6_040)).to.equal(true);
  });
});
