// Event store throughput: `npm run bench:store` (BENCH_STORE=sqlite|postgres|all, default all;
// BENCH_RUNS=n runs per measurement, default 5). Prints medians and the group-commit ratio.
import Database from "better-sqlite3";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type { EventStore, NewEvent } from "../src/store/eventStore.js";
import { openPostgresEventStore } from "../src/store/postgres/postgresEventStore.js";
import { openSqliteEventStore } from "../src/store/sqlite/sqliteEventStore.js";
import pg from "pg";

interface BenchTarget {
  readonly name: string;
  open(): Promise<{ store: EventStore; dispose(): Promise<void> }>;
}

const runs = Number(process.env.BENCH_RUNS ?? 5);
const sequentialAppends = 400;
const concurrentTasks = 64;
const appendsPerTask = 40;
const prefillEvents = 20000;

const payload = (n: number): NewEvent => ({
  type: "EventEmitted",
  data: { n, summary: `event number ${n}`, body: { temperature: 21.5, tags: ["a", "b"], text: "x".repeat(120) } },
  metadata: { emitterId: "dc_bench", ts: Date.now() },
});

function temporaryDirectory(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "headwater-bench-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const sqliteTarget: BenchTarget = {
  name: "sqlite",
  async open() {
    const { dir, remove } = temporaryDirectory();
    const store = openSqliteEventStore({ file: join(dir, "events.db") });
    return { store, dispose: async () => (await store.close(), remove()) };
  },
};

const postgresUrl = process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const postgresTarget: BenchTarget = {
  name: "postgres",
  async open() {
    const schema = `hw_bench_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const store = await openPostgresEventStore({ connectionString: postgresUrl, schema });
    return {
      store,
      async dispose() {
        await store.close();
        const client = new pg.Client({ connectionString: postgresUrl });
        await client.connect();
        await client.query(`DROP SCHEMA "${schema}" CASCADE`);
        await client.end();
      },
    };
  },
};

async function timed(work: () => Promise<number>): Promise<number> {
  const started = process.hrtime.bigint();
  const count = await work();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return count / seconds;
}

/** One writer awaiting each append: one transaction, one fsync per append. */
async function sequentialAppendRate(store: EventStore): Promise<number> {
  return timed(async () => {
    for (let n = 0; n < sequentialAppends; n++) await store.append(`source-seq-${n % 10}`, [payload(n)]);
    return sequentialAppends;
  });
}

/** Many tasks each awaiting its own appends: group commit folds them into shared transactions. */
async function concurrentAppendRate(store: EventStore): Promise<number> {
  return timed(async () => {
    await Promise.all(
      Array.from({ length: concurrentTasks }, async (_, task) => {
        for (let n = 0; n < appendsPerTask; n++) await store.append(`source-con-${task}`, [payload(n)]);
      }),
    );
    return concurrentTasks * appendsPerTask;
  });
}

async function prefill(store: EventStore): Promise<void> {
  const perAppend = 50;
  const appends = prefillEvents / perAppend;
  await Promise.all(
    Array.from({ length: 20 }, async (_, task) => {
      for (let n = task; n < appends; n += 20) {
        await store.append(
          `source-fill-${n % 200}`,
          Array.from({ length: perAppend }, (_, i) => payload(n * perAppend + i)),
        );
      }
    }),
  );
}

async function readAllRate(store: EventStore): Promise<number> {
  return timed(async () => {
    let from = 0;
    let count = 0;
    for (;;) {
      const page = await store.readAll({ fromPosition: from, maxCount: 1000 });
      if (page.length === 0) return count;
      count += page.length;
      from = page[page.length - 1].position;
    }
  });
}

/** A projection rebuild stand-in: catch up from 0, writing each event into a SQLite read model per batch. */
async function rebuildRate(store: EventStore, readModelFile: string): Promise<number> {
  const readModel = new Database(readModelFile);
  readModel.pragma("journal_mode = WAL");
  readModel.exec(`
    DROP TABLE IF EXISTS emitted_events; DROP TABLE IF EXISTS checkpoint;
    CREATE TABLE emitted_events (position INTEGER PRIMARY KEY, emitter TEXT, summary TEXT, body TEXT, ts INTEGER);
    CREATE INDEX emitted_by_emitter ON emitted_events (emitter, position);
    CREATE TABLE checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1), position INTEGER);
  `);
  const insert = readModel.prepare("INSERT INTO emitted_events VALUES (?, ?, ?, ?, ?)");
  const saveCheckpoint = readModel.prepare(
    "INSERT INTO checkpoint VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position",
  );
  const applyBatch = readModel.transaction((events: readonly import("../src/store/eventStore.js").RecordedEvent[]) => {
    for (const event of events) {
      const data = event.data as { summary: string; body: unknown };
      insert.run(event.position, event.stream, data.summary, JSON.stringify(data.body), event.created);
    }
    saveCheckpoint.run(events[events.length - 1].position);
  });
  const head = await store.headPosition();
  const rate = await timed(
    () =>
      new Promise<number>((resolve, reject) => {
        let count = 0;
        const subscription = store.subscribeToAll({
          fromPosition: 0,
          batchSize: 500,
          onEvents: (events) => {
            applyBatch(events);
            count += events.length;
            if (events[events.length - 1].position >= head) void subscription.stop().then(() => resolve(count));
          },
          onError: reject,
        });
      }),
  );
  readModel.close();
  return rate;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

async function benchTarget(target: BenchTarget): Promise<Record<string, number>> {
  const samples: Record<string, number[]> = { sequential: [], concurrent: [], readAll: [], rebuild: [] };
  for (let run = 0; run < runs; run++) {
    const opened = await target.open();
    const { store } = opened;
    const dispose = () => opened.dispose();
    const { dir, remove } = temporaryDirectory();
    try {
      samples.sequential.push(await sequentialAppendRate(store));
      samples.concurrent.push(await concurrentAppendRate(store));
      await prefill(store);
      samples.readAll.push(await readAllRate(store));
      samples.rebuild.push(await rebuildRate(store, join(dir, "read-model.db")));
    } finally {
      await dispose();
      remove();
    }
    process.stderr.write(`${target.name} run ${run + 1}/${runs} done\n`);
  }
  return Object.fromEntries(Object.entries(samples).map(([key, values]) => [key, median(values)]));
}

const targets = [sqliteTarget, postgresTarget];
const chosen = process.env.BENCH_STORE ?? "all";
const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpus()[0]?.model;
console.log(`machine: ${cpus().length} cpus (${cpuModel}), node ${process.version}, ${new Date().toISOString()}`);
console.log(
  `runs: ${runs} (medians); sequential ${sequentialAppends} appends; concurrent ${concurrentTasks} tasks x ${appendsPerTask}; reads/rebuild over ${prefillEvents + sequentialAppends + concurrentTasks * appendsPerTask} events`,
);
console.log("| store | sequential appends/s | concurrent appends/s | concurrent / sequential | $all read events/s | rebuild events/s |");
console.log("|---|---|---|---|---|---|");
for (const target of targets.filter((t) => chosen === "all" || chosen === t.name)) {
  const result = await benchTarget(target);
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  console.log(
    `| ${target.name} | ${fmt(result.sequential)} | ${fmt(result.concurrent)} | ${(result.concurrent / result.sequential).toFixed(1)}x | ${fmt(result.readAll)} | ${fmt(result.rebuild)} |`,
  );
}
