// Where the time of one run goes: `npm run bench:run-path`. Writes nothing; the results are
// recorded by hand in bench/results/run-path.md.
//
// Stages, each timed on its own in this process with the real parts (per run, median of
// BENCH_RUNS rounds, default 3), at batch size 1 (one run at a time: the path before batching)
// and at BENCH_BATCH (default 64, HEADWATER_RUN_BATCH_MAX's default):
//   bus        embedded bus: a publish per message (32 in flight, as endpoint requests do) and
//              keyed consumption (records of one key handed over together, offsets committed)
//   sandbox    the isolated-vm runtime (one runner child): invoke() per run vs invokeBatch();
//              "isolate" is the time the child measured inside the isolate, "IPC" the rest
//   append     SQLite event store: a run's events and state, and its log beside them, through
//              EmitterStore/RunLogStore (record per run vs recordBatch)
//   projection the read models catching up on what the append stage wrote (a fresh projector)
// Then end to end on the real server process (HEADWATER_RUN_BATCH_MAX=1 vs BENCH_BATCH):
//   HTTP       queued POSTs to one source's endpoint (32 connections), p50 and req/s
//   runs/s     BENCH_E2E_REQUESTS (default 4000) queued requests until every event is on SSE
//   custom     custom-response POSTs (the answer after the run's event is durable), 32 connections, 3 s
import http from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { EventSource } from "eventsource";
import { Runtime, prepareComponent, type Invocation } from "../src/runtime/index.js";
import { openSqliteEventStore } from "../src/store/sqlite/sqliteEventStore.js";
import { EmitterStore } from "../commands/emitters/emitterStore.js";
import { RunLogStore } from "../commands/runLogs/runLogStore.js";
import { runLogged } from "../commands/runLogs/runLog.js";
import type { RecordRun } from "../commands/emitters/emitter.js";
import { openReadModels } from "../src/readModels/database.js";
import { Projector } from "../src/projector/projector.js";
import { allProjections } from "../projections/index.js";
import { openEmbeddedBus } from "../src/bus/embedded/embeddedBus.js";
import { TestServer } from "../test/harness/server.js";
import { PER_SOURCE_MEMO_ENTRIES } from "../src/readModels/memo.js";
import { postStatus } from "./common.js";

const rounds = Number(process.env.BENCH_RUNS ?? 3);
const BATCH = Number(process.env.BENCH_BATCH ?? 64);
const N = Number(process.env.BENCH_N ?? 2048);
const E2E_REQUESTS = Number(process.env.BENCH_E2E_REQUESTS ?? 4000);
const CONNECTIONS = 32;

const median = (values: number[]) => {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const now = () => performance.now();
const chunks = <T>(list: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, i * size + size));

/** ~200 bytes of JSON, like a small webhook (as bench:ingest sends). */
const eventBody = (seq: number) => ({
  seq,
  type: "order.created",
  order: { id: `ord_${seq}`, total: 4210, currency: "EUR", items: [{ sku: "A-1", qty: 2 }] },
  note: "x".repeat(60),
});

const EMIT_BODY = (customResponse: boolean) => `export default {
  name: "run path ${customResponse ? "custom" : "queued"}", version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: ${customResponse} } },
  async run(event) {
    this.$emit(event.body, { summary: "bench" });
    ${customResponse ? `this.http.respond({ status: 200, body: "ok" });` : ""}
  },
};`;

interface StageTimes {
  /** Microseconds per run. */
  publish: number;
  consume: number;
  sandbox: number;
  isolate: number;
  append: number;
  projection: number;
}

async function busStage(batch: number): Promise<Pick<StageTimes, "publish" | "consume">> {
  const dir = mkdtempSync(path.join(tmpdir(), "run-path-bus-"));
  const bus = await openEmbeddedBus({ file: path.join(dir, "bus.db") });
  try {
    await bus.ensureTopics([{ name: "bench", partitions: 16 }]);
    const value = JSON.stringify(eventBody(1));
    const t0 = now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < N) {
          next++;
          await bus.publish("bench", [{ key: "dc_one", value }]);
        }
      }),
    );
    const publish = ((now() - t0) * 1000) / N;
    let seen = 0;
    let done: () => void = () => {};
    const all = new Promise<void>((resolve) => (done = resolve));
    const t1 = now();
    const consumer = await bus.consume({
      groupId: "bench",
      topics: ["bench"],
      keyed: {
        maxBatch: batch,
        handler: async (records) => {
          seen += records.length;
          if (seen >= N) done();
        },
      },
    });
    await all;
    const consume = ((now() - t1) * 1000) / N;
    await consumer.stop();
    return { publish, consume };
  } finally {
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function sandboxStage(runtime: Runtime, base: Invocation, batch: number): Promise<Pick<StageTimes, "sandbox" | "isolate">> {
  const invocations = Array.from({ length: N }, (_, i): Invocation => ({
    ...base,
    invocationId: `inv_${i}`,
    event: { body: eventBody(i) },
  }));
  let inIsolate = 0;
  const t0 = now();
  if (batch === 1) {
    for (const inv of invocations) inIsolate += (await runtime.invoke(inv)).wallMs;
  } else {
    for (const chunk of chunks(invocations, batch)) for (const o of await runtime.invokeBatch(chunk)) inIsolate += o.wallMs;
  }
  return { sandbox: ((now() - t0) * 1000) / N, isolate: (inIsolate * 1000) / N };
}

async function appendAndProjectionStage(batch: number): Promise<Pick<StageTimes, "append" | "projection">> {
  const dir = mkdtempSync(path.join(tmpdir(), "run-path-store-"));
  const store = openSqliteEventStore({ file: path.join(dir, "events.db") });
  try {
    const emitters = new EmitterStore(store, { states: PER_SOURCE_MEMO_ENTRIES });
    const runLogs = new RunLogStore(store);
    const emitterId = "dc_bench";
    const command = (i: number): RecordRun => ({
      emitterId,
      invocationId: `inv_${i}`,
      strategy: undefined,
      emits: [{ event: eventBody(i), meta: { summary: "bench" } }],
      db: {},
      dbChanged: false,
      startedMs: Date.now(),
      nowMs: Date.now(),
    });
    const logOf = (i: number) =>
      runLogged({
        sourceId: emitterId,
        invocationId: `inv_${i}`,
        trigger: "http",
        userId: "u_bench",
        startedMs: Date.now(),
        endedMs: Date.now(),
        wallMs: 0.2,
        ok: true,
        error: null,
        lines: [],
        warnings: [],
      });
    const t0 = now();
    if (batch === 1) {
      for (let i = 0; i < N; i++) {
        const loaded = await emitters.load(emitterId);
        await emitters.record(command(i), { loaded, alongside: () => runLogs.append(logOf(i)) });
      }
    } else {
      for (let from = 0; from < N; from += batch) {
        const ids = Array.from({ length: Math.min(batch, N - from) }, (_, k) => from + k);
        const loaded = await emitters.loadCached(emitterId);
        await emitters.recordBatch(
          ids.map((i) => command(i)),
          { loaded, alongside: () => runLogs.appendMany(ids.map(logOf)) },
        );
      }
    }
    const append = ((now() - t0) * 1000) / N;
    const head = await store.headPosition();
    const db = openReadModels(path.join(dir, "read.db"));
    const projector = new Projector(store, db, allProjections);
    const t1 = now();
    projector.start();
    await projector.waitFor(head, 120_000);
    const projection = ((now() - t1) * 1000) / N;
    await projector.stop();
    db.close();
    return { append, projection };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface EndToEnd {
  queuedRps: number;
  queuedP50: number;
  runsPerSecond: number;
  customRps: number;
  customP50: number;
}

async function endToEnd(batch: number): Promise<EndToEnd> {
  const server = new TestServer({
    env: {
      HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000000",
      HEADWATER_ENDPOINT_BURST: "1000000",
      HEADWATER_SOURCE_BACKLOG: "100000",
      HEADWATER_RUN_BATCH_MAX: String(batch),
    },
  });
  await server.start(60_000);
  try {
    const admin = server.client();
    const create = async (customResponse: boolean) => {
      const r = await admin.post("/v1/sources", { component_code: EMIT_BODY(customResponse) });
      if (r.status !== 200) throw new Error(`deploy: ${r.status}`);
      return { id: r.body.data.id as string, endpoint: new URL(r.body.data.configured_props.http.endpoint_url as string) };
    };
    const queued = await create(false);
    const custom = await create(true);
    let seen = 0;
    let last = 0;
    const es = new EventSource(`${server.url}/sources/${queued.id}/sse`, {
      fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${server.bootstrapKey}` } }),
    });
    es.addEventListener("message", () => {
      seen++;
      last = now();
    });
    await new Promise<void>((resolve) => es.addEventListener("open", () => resolve(), { once: true }));

    const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const latencies: number[] = [];
    let next = 0;
    let accepted = 0;
    const t0 = now();
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < E2E_REQUESTS) {
          const seq = next++;
          const sent = now();
          if ((await postStatus(agent, queued.endpoint, JSON.stringify(eventBody(seq)))) === 200) accepted++;
          latencies.push(now() - sent);
        }
      }),
    );
    const loadSeconds = (now() - t0) / 1000;
    const deadline = Date.now() + 10 * 60_000;
    while (seen < accepted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    es.close();
    const runsPerSecond = accepted / ((last - t0) / 1000);

    const customLatencies: number[] = [];
    const end = now() + 3000;
    let seq = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (now() < end) {
          const sent = now();
          if ((await postStatus(agent, custom.endpoint, JSON.stringify(eventBody(seq++)))) === 200) customLatencies.push(now() - sent);
        }
      }),
    );
    agent.destroy();
    return {
      queuedRps: accepted / loadSeconds,
      queuedP50: median(latencies),
      runsPerSecond,
      customRps: customLatencies.length / 3,
      customP50: median(customLatencies),
    };
  } finally {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
}

const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
console.log(
  `machine: ${cpus().length} cpus (${cpuModel}), node ${process.version}, ${new Date().toISOString()}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(`rounds: ${rounds} (medians); ${N} runs per in-process stage; batch 1 vs ${BATCH}; ${E2E_REQUESTS} queued requests end to end`);

const cacheDir = mkdtempSync(path.join(tmpdir(), "run-path-runtime-"));
const runtime = new Runtime({ cacheDir, workers: 1 });
await runtime.ready();
const prepared = await prepareComponent({ code: EMIT_BODY(false) }, { runtime });
const base: Invocation = {
  invocationId: "warm",
  ownerId: "u_bench",
  sourceId: "dc_bench",
  codeHash: prepared.codeHash,
  bundleHash: prepared.bundleHash,
  bundle: prepared.bundle,
  method: "run",
  props: {},
  db: {},
  http: { endpoint: "http://127.0.0.1/e/bench" },
};
for (let i = 0; i < 300; i++) await runtime.invoke({ ...base, event: { body: eventBody(i) } });

const stages: Record<number, StageTimes[]> = { 1: [], [BATCH]: [] };
const e2e: Record<number, EndToEnd[]> = { 1: [], [BATCH]: [] };
for (let round = 0; round < rounds; round++) {
  for (const batch of [1, BATCH]) {
    const s: StageTimes = {
      ...(await busStage(batch)),
      ...(await sandboxStage(runtime, base, batch)),
      ...(await appendAndProjectionStage(batch)),
    };
    stages[batch].push(s);
    const e = await endToEnd(batch);
    e2e[batch].push(e);
    console.log(
      `round ${round + 1} batch ${batch}: publish ${s.publish.toFixed(1)} µs, consume ${s.consume.toFixed(1)} µs, sandbox ${s.sandbox.toFixed(1)} µs ` +
        `(isolate ${s.isolate.toFixed(1)}), append ${s.append.toFixed(1)} µs, projection ${s.projection.toFixed(1)} µs | ` +
        `queued ${Math.round(e.queuedRps)} req/s p50 ${e.queuedP50.toFixed(1)} ms, runs ${Math.round(e.runsPerSecond)}/s, custom ${Math.round(e.customRps)} req/s p50 ${e.customP50.toFixed(1)} ms`,
    );
  }
}
await runtime.close();
rmSync(cacheDir, { recursive: true, force: true });

const m = (batch: number, pick: (s: StageTimes) => number) => median(stages[batch].map(pick));
const me = (batch: number, pick: (e: EndToEnd) => number) => median(e2e[batch].map(pick));
const rows: [string, (s: StageTimes) => number][] = [
  ["bus: publish (per message, 32 in flight)", (s) => s.publish],
  ["bus: keyed consume + commit", (s) => s.consume],
  ["sandbox: IPC (round trip minus isolate)", (s) => s.sandbox - s.isolate],
  ["sandbox: isolate (inside the child)", (s) => s.isolate],
  ["append: events + state + log", (s) => s.append],
  ["projection: read models", (s) => s.projection],
];
console.log(`\n| stage (µs per run) | batch 1 | batch ${BATCH} | before / after |`);
console.log("|---|---|---|---|");
for (const [name, pick] of rows) {
  const a = m(1, pick);
  const b = m(BATCH, pick);
  console.log(`| ${name} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(a / b).toFixed(2)}× |`);
}
const total = (s: StageTimes) => s.publish + s.consume + s.sandbox + s.append + s.projection;
console.log(
  `| sum of the stages | ${m(1, total).toFixed(1)} | ${m(BATCH, total).toFixed(1)} | ${(m(1, total) / m(BATCH, total)).toFixed(2)}× |`,
);
console.log(`\n| end to end (server process) | batch 1 | batch ${BATCH} | after / before |`);
console.log("|---|---|---|---|");
const erow = (name: string, pick: (e: EndToEnd) => number, digits = 0) =>
  console.log(
    `| ${name} | ${me(1, pick).toFixed(digits)} | ${me(BATCH, pick).toFixed(digits)} | ${(me(BATCH, pick) / me(1, pick)).toFixed(2)}× |`,
  );
erow("HTTP: queued req/s, 1 source", (e) => e.queuedRps);
erow("HTTP: queued p50 ms", (e) => e.queuedP50, 1);
erow("runs/s end to end, 1 source", (e) => e.runsPerSecond);
erow("runs/s / queued req/s", (e) => e.runsPerSecond / e.queuedRps, 2);
erow("custom response req/s, 1 source", (e) => e.customRps);
erow("custom response p50 ms", (e) => e.customP50, 1);
