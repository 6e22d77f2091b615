// Ingest through source HTTP endpoints: `npm run bench:ingest`.
// BENCH_RUNS=n runs (default 3, medians), BENCH_SECONDS=s of measured load (default 5, after 1 s
// of warm-up), BENCH_CONCURRENCY=c requests in flight (default 32), BENCH_LATENCY_EVENTS=n
// (default 200). Each run starts a fresh server process (embedded default) and a bare Koa process.
import http from "node:http";
import { readFileSync, rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { EventSource } from "eventsource";
import { TestServer, type TestMode } from "../test/harness/server.js";
import { stopSharedKafka } from "../test/harness/kafka.js";
import { dropTestSchemas } from "../test/harness/postgres.js";
import { emitBodyComponent, startPlainKoa, postStatus } from "./common.js";

const runs = Number(process.env.BENCH_RUNS ?? 3);
/** embedded (SQLite log, embedded bus) or scaled (PostgreSQL log, Kafka bus from the test harness). */
const mode: TestMode = process.env.BENCH_MODE === "scaled" ? "scaled" : "embedded";
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupSeconds = 1;
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
const latencyEvents = Number(process.env.BENCH_LATENCY_EVENTS ?? 200);

/** Emits the request body; `customResponse` decides when the endpoint answers. */
const component = (customResponse: boolean) => emitBodyComponent("ingest", customResponse);

/** ~200 bytes of JSON, like a small webhook. */
const body = (seq: number) =>
  JSON.stringify({
    seq,
    type: "order.created",
    order: { id: `ord_${seq}`, total: 4210, currency: "EUR", items: [{ sku: "A-1", qty: 2 }] },
    note: "x".repeat(60),
  });

interface LoadResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** Requests answered 200 over the whole load, warm-up included. */
  readonly accepted: number;
  readonly failed: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const median = (values: number[]) => {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * `concurrency` keep-alive connections, each sending its next request when the last one is
 * answered; connection i posts to targets[i % targets.length].
 */
async function load(targets: readonly string[], seq: { next: number }): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const started = performance.now();
  const measureFrom = started + warmupSeconds * 1000;
  const end = measureFrom + seconds * 1000;
  const latencies: number[] = [];
  let accepted = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const url = new URL(targets[i % targets.length]);
      while (performance.now() < end) {
        const sent = performance.now();
        let status: number;
        try {
          status = await postStatus(agent, url, body(seq.next++));
        } catch {
          status = 0;
        }
        const answered = performance.now();
        if (status === 200) accepted++;
        else failed++;
        if (sent >= measureFrom && answered <= end && status === 200) latencies.push(answered - sent);
      }
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), accepted, failed };
}

/** An EventSource on a source: counts events and reports each event's arrival by its `seq`. */
function watch(sseUrl: string, key: string) {
  const arrivals = new Map<number, number>();
  let count = 0;
  let last = 0;
  const es = new EventSource(sseUrl, {
    fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } }),
  });
  es.addEventListener("message", (e) => {
    count++;
    last = performance.now();
    const seq = (JSON.parse(e.data as string) as { event: { seq: number } }).event.seq;
    arrivals.set(seq, last);
  });
  return {
    es,
    arrivals,
    get count() {
      return count;
    },
    get last() {
      return last;
    },
    opened: () => new Promise<void>((resolve) => es.addEventListener("open", () => resolve(), { once: true })),
  };
}

async function until(what: string, probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** POST one event at a time and time its arrival on the open EventSource. */
async function emitToSse(endpoint: string, watcher: ReturnType<typeof watch>, seq: { next: number }) {
  const url = new URL(endpoint);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  for (let i = 0; i < latencyEvents; i++) {
    const n = seq.next++;
    const sent = performance.now();
    const status = await postStatus(agent, url, body(n));
    if (status !== 200) throw new Error(`POST answered ${status}`);
    await until(`event ${n} on SSE`, () => watcher.arrivals.has(n), 30_000);
    latencies.push(watcher.arrivals.get(n)! - sent);
  }
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

type Drained = LoadResult & { drainSeconds: number; runsPerSecond: number };

interface Sample {
  koa: LoadResult;
  queued: Drained;
  queuedMany: Drained;
  custom: LoadResult;
  customMany: LoadResult;
  sseQueued: { p50: number; p99: number };
  sseCustom: { p50: number; p99: number };
}

/** Sources spread over the invocation partitions (runs of one source are serial by design). */
const MANY = 16;

async function oneRun(): Promise<Sample> {
  const koa = await startPlainKoa();
  const server = new TestServer({
    mode,
    env: {
      HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000000",
      HEADWATER_ENDPOINT_BURST: "1000000",
      // HEADWATER_RUN_BATCH_MAX=1 measures runs one at a time (before batching); the backlog bounds as set, if set.
      ...Object.fromEntries(
        ["HEADWATER_RUN_BATCH_MAX", "HEADWATER_SOURCE_BACKLOG", "HEADWATER_OWNER_BACKLOG", "HEADWATER_NODE_BACKLOG"].flatMap((name) =>
          process.env[name] ? [[name, process.env[name]]] : [],
        ),
      ),
    },
  });
  await server.start(60_000);
  try {
    const admin = server.client();
    let made = 0;
    const create = async (customResponse: boolean) => {
      const r = await admin.post("/v1/sources", { component_code: component(customResponse), name: `bench-${made++}` });
      if (r.status !== 200) throw new Error(`creating a source: ${r.status} ${JSON.stringify(r.body)}`);
      const id = r.body.data.id as string;
      const watcher = watch(`${server.url}/sources/${id}/sse`, server.bootstrapKey);
      await watcher.opened();
      return { id, endpoint: r.body.data.configured_props.http.endpoint_url as string, watcher };
    };
    type Made = Awaited<ReturnType<typeof create>>;
    const many = async (customResponse: boolean) => {
      const list: Made[] = [];
      for (let i = 0; i < MANY; i++) list.push(await create(customResponse));
      return list;
    };
    const queued = await create(false);
    const custom = await create(true);
    const queuedMany = await many(false);
    const customMany = await many(true);
    const count = (sources: Made[]) => sources.reduce((n, s) => n + s.watcher.count, 0);
    const lastArrival = (sources: Made[]) => Math.max(...sources.map((s) => s.watcher.last));

    const koaResult = await load([koa.url], { next: 0 });

    // Answered once the invocation is durably queued; the runs drain afterwards.
    const drained = async (sources: Made[]): Promise<Drained> => {
      const loadStarted = performance.now();
      const result = await load(
        sources.map((s) => s.endpoint),
        { next: 0 },
      );
      const loadEnded = performance.now();
      await until("the queued runs to drain", () => count(sources) >= result.accepted, 10 * 60_000);
      const last = lastArrival(sources);
      return {
        ...result,
        drainSeconds: Math.max(0, last - loadEnded) / 1000,
        runsPerSecond: result.accepted / ((last - loadStarted) / 1000),
      };
    };
    const queuedResult = await drained([queued]);
    const queuedManyResult = await drained(queuedMany);

    // Answered after the run ended and its event was appended.
    const answered = async (sources: Made[]) => {
      const result = await load(
        sources.map((s) => s.endpoint),
        { next: 1_000_000 },
      );
      await until("the custom runs' events", () => count(sources) >= result.accepted, 60_000);
      return result;
    };
    const customResult = await answered([custom]);
    const customManyResult = await answered(customMany);

    const sseQueued = await emitToSse(queued.endpoint, queued.watcher, { next: 2_000_000 });
    const sseCustom = await emitToSse(custom.endpoint, custom.watcher, { next: 3_000_000 });
    for (const s of [queued, custom, ...queuedMany, ...customMany]) s.watcher.es.close();
    return {
      koa: koaResult,
      queued: queuedResult,
      queuedMany: queuedManyResult,
      custom: customResult,
      customMany: customManyResult,
      sseQueued,
      sseCustom,
    };
  } finally {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
    koa.child.kill("SIGTERM");
  }
}

const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
console.log(
  `machine: ${cpus().length} cpus (${cpuModel}), node ${process.version}, ${new Date().toISOString()}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.log(`mode: ${mode === "scaled" ? "scaled (PostgreSQL log, Kafka bus)" : "embedded (SQLite log, embedded bus)"}`);
console.log(
  `runs: ${runs} (medians); ${concurrency} connections, ${warmupSeconds} s warm-up + ${seconds} s measured per load; ${latencyEvents} sequential events for emit-to-SSE`,
);

const samples: Sample[] = [];
const f = (r: LoadResult) =>
  `${Math.round(r.rps)} req/s p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms${r.failed ? ` (${r.failed} failed)` : ""}`;
const d = (r: Drained) => `${f(r)}, runs ${Math.round(r.runsPerSecond)}/s, drained ${r.drainSeconds.toFixed(1)} s after`;
for (let i = 0; i < runs; i++) {
  const s = await oneRun();
  samples.push(s);
  console.log(
    `run ${i + 1}: koa ${f(s.koa)} | queued ${d(s.queued)} | queued x${MANY} ${d(s.queuedMany)} | custom ${f(s.custom)} | custom x${MANY} ${f(s.customMany)} | ` +
      `emit-to-SSE queued p50 ${s.sseQueued.p50.toFixed(1)} p99 ${s.sseQueued.p99.toFixed(1)} ms, custom p50 ${s.sseCustom.p50.toFixed(1)} p99 ${s.sseCustom.p99.toFixed(1)} ms`,
  );
}

const m = (pick: (s: Sample) => number) => median(samples.map(pick));
// Ratios are taken within each run (same machine state), then the median of those.
const row = (name: string, pick: (s: Sample) => LoadResult) =>
  `| ${name} | ${Math.round(m((s) => pick(s).rps)).toLocaleString("en")} | ${m((s) => pick(s).p50).toFixed(1)} | ${m((s) => pick(s).p99).toFixed(1)} | ${m((s) => pick(s).rps / s.koa.rps).toFixed(3)} |`;
console.log("\n| target | requests/s | p50 ms | p99 ms | / plain Koa (same run) |");
console.log("|---|---|---|---|---|");
console.log(row("plain Koa (ceiling)", (s) => s.koa));
console.log(row("1 source, answer when queued", (s) => s.queued));
console.log(row(`${MANY} sources, answer when queued`, (s) => s.queuedMany));
console.log(row("1 source, custom response (answer after append)", (s) => s.custom));
console.log(row(`${MANY} sources, custom response (answer after append)`, (s) => s.customMany));
console.log(
  `\nqueued, runs completed end to end: 1 source ${Math.round(m((s) => s.queued.runsPerSecond))}/s (backlog drained ${m((s) => s.queued.drainSeconds).toFixed(1)} s after the load); ` +
    `${MANY} sources ${Math.round(m((s) => s.queuedMany.runsPerSecond))}/s (drained ${m((s) => s.queuedMany.drainSeconds).toFixed(1)} s after)`,
);
console.log(
  `end-to-end runs/s / queued ingest req/s (same run): 1 source ${m((s) => s.queued.runsPerSecond / s.queued.rps).toFixed(2)}, ` +
    `${MANY} sources ${m((s) => s.queuedMany.runsPerSecond / s.queuedMany.rps).toFixed(2)}; refused (429/503) during the queued loads: ` +
    `1 source ${m((s) => s.queued.failed)}, ${MANY} sources ${m((s) => s.queuedMany.failed)}`,
);
console.log(
  `emit-to-SSE (POST sent -> event on EventSource, one at a time, 1 source): queued p50 ${m((s) => s.sseQueued.p50).toFixed(1)} ms p99 ${m((s) => s.sseQueued.p99).toFixed(1)} ms; ` +
    `custom response p50 ${m((s) => s.sseCustom.p50).toFixed(1)} ms p99 ${m((s) => s.sseCustom.p99).toFixed(1)} ms`,
);

if (mode === "scaled") {
  await stopSharedKafka();
  await dropTestSchemas();
}
