import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "better-sqlite3";
import { parkedEvents, Projector, rebuildProjections } from "../../src/projector/projector.js";
import type { Projection } from "../../src/projector/projection.js";
import { openReadModels } from "../../src/readModels/database.js";
import type { EventStore, RecordedEvent } from "../../src/store/eventStore.js";
import { openSqliteEventStore } from "../../src/store/sqlite/sqliteEventStore.js";
import { cliHome, runCli } from "../cli/cliHarness.js";

/** Records each `Item` it applies; throws on the ones marked `poison` after writing its row (which must not stay). */
const items = (name: string, fails: (event: RecordedEvent) => Error | undefined): Projection => ({
  name,
  version: 1,
  schema: [`CREATE TABLE IF NOT EXISTS ${name} (n INTEGER PRIMARY KEY)`],
  tables: [name],
  handles: new Set(["Item"]),
  apply(db: Database, event: RecordedEvent) {
    db.prepare(`INSERT INTO ${name} (n) VALUES (?)`).run((event.data as { n: number }).n);
    const error = fails(event);
    if (error) throw error;
  },
});

const rows = (db: Database, table: string) => db.prepare(`SELECT n FROM ${table} ORDER BY n`).pluck().all();

describe("projector: an event a read model cannot apply is parked, and the read models go on", function () {
  this.timeout(30_000);
  let dir: string;
  let store: EventStore;
  let db: Database;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "hw-parking-"));
    store = openSqliteEventStore({ file: join(dir, "log.db") });
    for (let n = 1; n <= 12; n++) await store.append(`items-${n % 3}`, [{ type: "Item", data: { n, poison: n === 5 || n === 9 } }]);
    db = openReadModels(join(dir, "readmodels.db"));
  });

  afterEach(async () => {
    if (db.open) db.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const poisoned = (event: RecordedEvent) =>
    (event.data as { poison: boolean }).poison ? new TypeError(`cannot read item ${(event.data as { n: number }).n}`) : undefined;

  it("parks only what fails alone, rolls its writes back, and applies everything else to every read model at once", async () => {
    const projector = new Projector(store, db, [items("fragile", poisoned), items("sturdy", () => undefined)], 4);
    projector.start();
    const started = Date.now();
    try {
      // Without parking this waited for ever: the projector retried the failing batch with back-off.
      await projector.waitFor(await store.headPosition(), 5_000);
    } finally {
      await projector.stop();
    }
    expect(Date.now() - started, "no retry pause").to.be.below(2_000);
    expect(rows(db, "fragile")).to.deep.equal([1, 2, 3, 4, 6, 7, 8, 10, 11, 12]);
    expect(rows(db, "sturdy")).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const parked = parkedEvents(db);
    expect(parked.map((p) => [p.projection, p.position, p.type, p.stream])).to.deep.equal([
      ["fragile", 5, "Item", "items-2"],
      ["fragile", 9, "Item", "items-0"],
    ]);
    expect(parked[0].error).to.equal("TypeError: cannot read item 5");
    expect(projector.parkedCount()).to.equal(2);
    // Applied again after a restart? No: the checkpoint moved past them.
    const again = new Projector(store, db, [items("fragile", poisoned), items("sturdy", () => undefined)], 4);
    again.start();
    await again.waitFor(await store.headPosition(), 5_000);
    await again.stop();
    expect(parkedEvents(db)).to.have.length(2);
  });

  it("a storage failure is not parked: the batch is retried until it applies", async () => {
    let busy = 2;
    const flaky = items("flaky", (event) =>
      (event.data as { n: number }).n === 3 && busy-- > 0
        ? Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" })
        : undefined,
    );
    const projector = new Projector(store, db, [flaky], 4);
    projector.start();
    try {
      // Each failed attempt rejects the waiters of its moment; the retries (after 0.5 s, then 1 s) apply it.
      const head = await store.headPosition();
      const deadline = Date.now() + 10_000;
      for (;;) {
        const reached = await projector.waitFor(head, 1_000).then(
          () => true,
          () => false,
        );
        if (reached) break;
        if (Date.now() > deadline) throw new Error("the batch was never applied");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await projector.stop();
    }
    expect(busy).to.equal(-1);
    expect(rows(db, "flaky")).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(parkedEvents(db)).to.deep.equal([]);
  });

  it("a rebuild starts the parked list afresh, and a fixed read model applies what was parked", async () => {
    const projector = new Projector(store, db, [items("fragile", poisoned)], 4);
    projector.start();
    await projector.waitFor(await store.headPosition(), 5_000);
    await projector.stop();
    expect(parkedEvents(db)).to.have.length(2);
    await rebuildProjections(store, db, [items("fragile", () => undefined)]);
    expect(parkedEvents(db)).to.deep.equal([]);
    expect(rows(db, "fragile")).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it("headwater projections parked lists them from the read-model file, beside a running node", async () => {
    const projector = new Projector(store, db, [items("fragile", poisoned)], 4);
    projector.start();
    await projector.waitFor(await store.headPosition(), 5_000);
    // The node still has the file open: the command only reads it.
    const listed = runCli(["projections", "parked"], { ...cliHome().env, HEADWATER_DATA_DIR: dir });
    const empty = runCli(["projections", "parked"], { ...cliHome().env, HEADWATER_DATA_DIR: join(dir, "none") });
    await projector.stop();
    expect(listed.status, listed.stderr).to.equal(0);
    expect(
      listed.json.map((p: { projection: string; position: number; error: string }) => [p.projection, p.position, p.error]),
    ).to.deep.equal([
      ["fragile", 5, "TypeError: cannot read item 5"],
      ["fragile", 9, "TypeError: cannot read item 9"],
    ]);
    expect(empty.status, empty.stderr).to.equal(0);
    expect(empty.json).to.deep.equal([]);
  });
});
