import { expect } from "chai";
import type { Database } from "better-sqlite3";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allProjections } from "../../projections/index.js";
import { KEPT_EVENTS, emittedEventsProjection } from "../../projections/emittedEvents.js";
import { rebuildReadModelsFile } from "../../src/projector/rebuildFile.js";
import { KEPT_RUN_LOGS } from "../../projections/runLogs.js";
import { Projector, rebuildProjections } from "../../src/projector/projector.js";
import { openReadModels } from "../../src/readModels/database.js";
import {
  dataLeftInLog,
  type EventStore,
  type NewEvent,
  type RecordedEvent,
  type SubscribeToAllOptions,
} from "../../src/store/eventStore.js";
import { openSqliteEventStore } from "../../src/store/sqlite/sqliteEventStore.js";

/** Every table and index of a read-model file, each table's rows in a fixed order. */
function contents(db: Database): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const objects = db
    .prepare<[], { type: string; name: string; sql: string | null }>("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
    .all();
  out.schema = objects;
  for (const { name } of objects.filter((o) => o.type === "table" && !o.name.startsWith("sqlite_"))) {
    const rows = db.prepare(`SELECT * FROM "${name}"`).all();
    out[name] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return out;
}

/** A deterministic pseudo-random sequence (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Values whose text or number a rebuild writing rows with SQL straight from the log could get
// other than JavaScript does (escapes, surrogates, exponents, precision), for the emitted events.
const oddStrings = ['quote " back \\ slash', "tab\tnew\nline\u0000nul\u001f", "lone \ud800 surrogate", "pair 😀 \u2029", "", "-0", "1e3"];
const oddNumbers = [0, -0, 1.5, 1e21, 1e-7, 2 ** 53 + 2, -(2 ** 31), 0.1 + 0.2, 123456789.12345679];
const oddValues: unknown[] = [
  ...oddStrings,
  ...oddNumbers,
  null,
  true,
  false,
  [],
  {},
  [1, "two", { three: [3] }],
  { "": { "a.b": { $: [null] } }, 'k"q': "\\" },
  { deep: { er: { est: oddNumbers } } },
];

/** `store` with some members replaced (the others call the store's own). */
function storeView(store: EventStore, replaced: Partial<EventStore>): EventStore {
  return {
    append: (stream, events, options) => store.append(stream, events, options),
    readStream: (stream, options) => store.readStream(stream, options),
    readAll: (options) => store.readAll(options),
    subscribeToAll: (options) => store.subscribeToAll(options),
    headPosition: () => store.headPosition(),
    streamRevision: (stream) => store.streamRevision(stream),
    streamRevisions: (streams) => store.streamRevisions(streams),
    truncateBefore: (stream, before) => store.truncateBefore(stream, before),
    close: () => store.close(),
    attachableFile: store.attachableFile,
    ...replaced,
  };
}

interface Append {
  readonly stream: string;
  readonly events: NewEvent[];
}

/**
 * A log like a busy node's: emitters well past the kept window of 100, their emits interleaved
 * with event deletions (each shape of range), run logs past their window, a source deleted in the
 * middle, a workflow deleted near the end, and other read models' events in between.
 */
function busyLog(seed: number): Append[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const owner = "u_owner";
  const sources = ["dc_a", "dc_b", "dc_c", "dc_d"];
  const workflow = "p_flow";
  const emitters = [...sources, workflow];
  const ids = new Map<string, string[]>(emitters.map((e) => [e, []]));
  const deleted = new Set<string>();
  const appends: Append[] = [
    {
      stream: `user-${owner}`,
      events: [{ type: "UserCreated", data: { id: owner, username: "o", email: "o@x.test", plan: "free", operator: false, at: 1 } }],
    },
    ...sources.map((id, i) => ({
      stream: `source-${id}`,
      events: [
        {
          type: "SourceDeployed",
          data: {
            id,
            ownerId: owner,
            creatorId: owner,
            componentId: "sc_1",
            name: `S${i}`,
            nameSlug: `s${i}`,
            endpointId: `e${i}`,
            configuredProps: {},
            active: true,
            at: 2,
          },
        },
      ],
    })),
  ];
  let ms = 1_700_000_000_000;
  for (let round = 0; round < 400; round++) {
    ms += 1 + Math.floor(next() * 3);
    const live = emitters.filter((e) => !deleted.has(e));
    // One busy source goes well past both windows (100 events, 100 run logs); the deleted
    // emitters run right before their deletion, so it lands among their newest events.
    const emitter = round === 249 ? "dc_b" : round === 379 ? workflow : next() < 0.4 ? "dc_a" : pick(live);
    const roll = next();
    if (round === 250) {
      deleted.add("dc_b");
      appends.push({
        stream: "source-dc_b",
        events: [{ type: "SourceDeleted", data: { id: "dc_b", ownerId: owner, nameSlug: "s1", at: ms } }],
      });
      continue;
    }
    if (round === 398) {
      // A range still in the window at the end, whatever the seed.
      const known = ids.get("dc_a")!;
      const [startId, endId] = [known[known.length - 20], known[known.length - 5]];
      appends.push({ stream: "emitter-dc_a", events: [{ type: "EventsDeleted", data: { emitterId: "dc_a", startId, endId, at: ms } }] });
      continue;
    }
    if (round === 380) {
      deleted.add(workflow);
      appends.push({
        stream: `workflow-${workflow}`,
        events: [{ type: "WorkflowDeleted", data: { id: workflow, ownerId: owner, key: "flow", at: ms } }],
      });
      continue;
    }
    if (roll < 0.1 && ids.get(emitter)!.length > 0 && round !== 249 && round !== 379) {
      // A deletion: all, from an id, up to an id, or a range; mostly of recent events, some of
      // them still in the window at the end, some trimmed in between.
      const known = ids.get(emitter)!.slice(-150);
      const i = Math.floor(next() * known.length);
      const j = i + Math.floor(next() * (known.length - i));
      const [startId, endId] = pick([
        [null, null],
        [known[i], null],
        [null, known[i]],
        [known[i], known[j]],
      ] as const);
      appends.push({
        stream: `emitter-${emitter}`,
        events: [{ type: "EventsDeleted", data: { emitterId: emitter, startId, endId, at: ms } }],
      });
      continue;
    }
    // A run: up to 40 emits with its RunRecorded, and its log line.
    const invocationId = `inv_${round}`;
    const count = 1 + Math.floor(next() * 40);
    const emits: NewEvent[] = [];
    for (let seq = 0; seq < count; seq++) {
      const id = `${ms}-${seq}`;
      ids.get(emitter)!.push(id);
      emits.push({
        type: "EventEmitted",
        data: {
          emitterId: emitter,
          id,
          channel: seq % 7 === 0 ? "fifths" : "",
          event:
            seq % 6 === 5
              ? oddValues[(round + seq) % oddValues.length]
              : { round, seq, text: "héllo \u2028 wörld", nested: { list: [1, 2.5, null] } },
          summary: seq % 3 === 0 ? null : seq % 3 === 1 ? `s${seq}` : oddStrings[(round + seq) % oddStrings.length],
          emitId: seq % 4 === 0 ? null : `e-${round}-${seq}`,
          ts: seq % 5 === 0 ? null : seq % 5 === 1 ? oddNumbers[(round + seq) % oddNumbers.length] : ms - seq,
          indexedAtMs: ms,
          invocationId,
        },
      });
    }
    const recorded = {
      emitterId: emitter,
      invocationId,
      at: ms,
      dedupe: {},
      db: {},
      lastEventId: `${ms}-${count - 1}`,
      recentInvocations: [invocationId],
    };
    appends.push({ stream: `emitter-${emitter}`, events: [...emits, { type: "RunRecorded", data: recorded }] });
    if (emitter !== workflow) {
      appends.push({
        stream: `logs-${emitter}`,
        events: [
          {
            type: "RunLogged",
            data: {
              sourceId: emitter,
              invocationId,
              trigger: "http",
              userId: owner,
              startedMs: ms,
              endedMs: ms + 3,
              computeMs: 2.6,
              ok: round % 9 !== 0,
              error: round % 9 === 0 ? { name: "Error", message: "boom" } : null,
              lines: [{ ts: ms, level: "log", message: `run ${round}` }],
            },
          },
        ],
      });
    }
  }
  return appends;
}

describe("projections rebuild", function () {
  this.timeout(60_000);
  let dir: string;
  let store: EventStore;
  const open: Database[] = [];

  beforeEach(function () {
    dir = mkdtempSync(join(tmpdir(), "headwater-rebuild-"));
    // Every rebuild here reads the log through the read-ahead thread, as a rebuild of a real log
    // (20,000 events or more) does; the live projector, starting at the empty log's head, does not.
    store = openSqliteEventStore({ file: join(dir, "log.db"), readAheadFrom: 1 });
  });

  afterEach(async function () {
    for (const db of open.splice(0)) db.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const readModels = (name: string): Database => {
    const db = openReadModels(join(dir, name));
    open.push(db);
    return db;
  };

  for (const seed of [1, 2, 3]) {
    it(`gives the same rows, table for table, as the live projector applying the log as it was written (seed ${seed})`, async () => {
      const live = readModels("live.db");
      const projector = new Projector(store, live, allProjections);
      projector.start();
      const next = random(seed + 100);
      let position = 0;
      for (const { stream, events } of busyLog(seed)) {
        position = (await store.append(stream, events)).position;
        // Mostly one append per batch, as a live node sees them; sometimes several together.
        if (next() < 0.7) await projector.waitFor(position);
      }
      await projector.waitFor(position);
      await projector.stop();

      const rebuilt = readModels("rebuilt.db");
      expect(await rebuildProjections(store, rebuilt, allProjections)).to.equal(position);

      const before = contents(live);
      const after = contents(rebuilt);
      // The log went past the windows and deleted events, so the comparison is not a trivial one.
      const emitted = live.prepare<[], { emitter_id: string; n: number; deleted: number }>(
        "SELECT emitter_id, COUNT(*) AS n, SUM(deleted) AS deleted FROM emitted_events GROUP BY emitter_id",
      );
      expect(emitted.all().some((row) => row.n === KEPT_EVENTS)).to.equal(true);
      expect(emitted.all().some((row) => row.deleted > 0)).to.equal(true);
      expect(emitted.all().map((row) => row.emitter_id))
        .to.not.include("dc_b")
        .and.not.include("p_flow");
      expect(live.prepare("SELECT COUNT(*) AS n FROM source_logs WHERE source_id = 'dc_a'").get()).to.deep.equal({ n: KEPT_RUN_LOGS });
      expect(after).to.deep.equal(before);
    });
  }

  it("writes the emitted events' rows straight from the log: they reach the projection without their data", async () => {
    for (const { stream, events } of busyLog(4)) await store.append(stream, events);
    let whole = 0;
    const left = new Map<string, number>();
    // The store as the rebuild sees it, counting what its subscription hands over.
    const counting = storeView(store, {
      subscribeToAll: (options: SubscribeToAllOptions) =>
        store.subscribeToAll({
          ...options,
          onEvents: (events) => {
            for (const event of events) {
              if (dataLeftInLog(event)) left.set(event.type, (left.get(event.type) ?? 0) + 1);
              else whole++;
            }
            return options.onEvents(events);
          },
        }),
    });
    const rebuilt = readModels("rebuilt.db");
    await rebuildProjections(counting, rebuilt, allProjections);
    const emitted = (await store.readAll()).filter((event) => event.type === "EventEmitted").length;
    expect([...left]).to.deep.equal([["EventEmitted", emitted]]);
    expect(whole).to.be.above(0);
    // And the rows are the same as a rebuild applying every event in JavaScript (a store that
    // cannot be attached).
    const plain = readModels("plain.db");
    await rebuildProjections(storeView(store, { attachableFile: undefined }), plain, allProjections);
    expect(contents(rebuilt)).to.deep.equal(contents(plain));
    // The log is no longer attached to the connection.
    expect(rebuilt.prepare("SELECT name FROM pragma_database_list ORDER BY seq").pluck().all()).to.deep.equal(["main"]);
  });

  it("into a file: builds it beside the old one and puts it in place whole, never applying the old file's WAL to it", async () => {
    for (const { stream, events } of busyLog(8)) await store.append(stream, events);
    const expected = readModels("expected.db");
    const position = await rebuildProjections(store, expected, allProjections);
    // The old read models as a killed node leaves them: rows in a WAL never copied back.
    const file = join(dir, "read-models.db");
    execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import Database from "better-sqlite3";
       const db = new Database(${JSON.stringify(file)});
       db.pragma("journal_mode = WAL");
       db.pragma("wal_autocheckpoint = 0");
       db.exec("CREATE TABLE old (n); CREATE TABLE emitted_events (stale);");
       for (let i = 0; i < 200; i++) db.prepare("INSERT INTO old VALUES (?)").run("x".repeat(4000));
       process.exit(0);`,
      ],
      { cwd: process.cwd() },
    );
    expect(statSync(`${file}-wal`).size, "the WAL the killed node left").to.be.above(100_000);
    const rebuilt = await rebuildReadModelsFile(store, file, allProjections);
    expect(rebuilt.position).to.equal(position);
    expect(existsSync(`${file}.rebuilding`)).to.equal(false);
    const db = readModels("read-models.db");
    expect(db.pragma("journal_mode", { simple: true })).to.equal("wal");
    expect(db.pragma("integrity_check", { simple: true })).to.equal("ok");
    expect(contents(db)).to.deep.equal(contents(expected));
  });

  it("into a file: a rebuild that fails leaves the old file as it was, and nothing beside it", async () => {
    for (const { stream, events } of busyLog(9)) await store.append(stream, events);
    const file = join(dir, "read-models.db");
    const old = readModels("read-models.db");
    await rebuildProjections(store, old, allProjections);
    const before = contents(old);
    old.close();
    open.splice(open.indexOf(old), 1);
    const failing = {
      ...emittedEventsProjection,
      name: "failing",
      tables: ["failing"],
      schema: [],
      applyBatch: (_db: Database, events: readonly RecordedEvent[]) => {
        // A storage failure: a rebuild gives up on it (a projection's own error would be parked).
        if (events.some((event) => event.position > 500)) {
          throw Object.assign(new Error("disk I/O error: this projection fails at position 500"), { code: "SQLITE_IOERR" });
        }
      },
    };
    let failure: unknown;
    await rebuildReadModelsFile(store, file, [...allProjections, failing]).catch((error: unknown) => (failure = error));
    expect(String(failure)).to.match(/fails at position 500/);
    expect(existsSync(`${file}.rebuilding`)).to.equal(false);
    expect(contents(readModels("read-models.db"))).to.deep.equal(before);
  });

  it("rebuilding over an existing read model gives the same rows as a fresh one", async () => {
    for (const { stream, events } of busyLog(7)) await store.append(stream, events);
    const fresh = readModels("fresh.db");
    await rebuildProjections(store, fresh, allProjections);
    const again = readModels("again.db");
    await rebuildProjections(store, again, allProjections);
    await rebuildProjections(store, again, allProjections);
    expect(contents(again)).to.deep.equal(contents(fresh));
  });

  it("copies the replay's WAL back at the close, and gives the connection its automatic checkpoint back", async () => {
    for (const { stream, events } of busyLog(5)) await store.append(stream, events);
    const db = readModels("rebuilt.db");
    // Small enough that the replay would cross it many times if the checkpoint were left on.
    db.pragma("wal_autocheckpoint = 10");
    await rebuildProjections(store, db, allProjections);
    // Nothing copied back yet: the file itself holds none of the replay's pages.
    const fileBytes = () => statSync(join(dir, "rebuilt.db")).size;
    const beforeClose = fileBytes();
    expect(beforeClose, "the file's bytes before the close").to.be.at.most(db.pragma("page_size", { simple: true }) as number);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).to.equal(10);
    const rows = contents(db);
    db.close();
    open.splice(open.indexOf(db), 1);
    expect(fileBytes(), "the file's bytes after the close").to.be.above(100 * beforeClose);
    expect(existsSync(join(dir, "rebuilt.db-wal")), "the WAL is gone once closed").to.equal(false);
    const reopened = readModels("rebuilt.db");
    expect(contents(reopened)).to.deep.equal(rows);
  });
});
