// Ingest through source HTTP endpoints: `npm run bench:ingest`.
// BENCH_RUNS=n runs (default 3, medians), BENCH_SECONDS=s of measured load (default 5, after 1 s
// of warm-up), BENCH_CONCURRENCY=c requests in flight (default 32), BENCH_LATENCY_EVENTS=n
// (default 200). Each run starts a fresh server process (embedded default) and a bare Koa process.
import http from "node:http";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { EventSource } from "eventsource";
import { TestServer } from "../test/harness/server.js";

const runs = Number(process.env.BENCH_RUNS ?? 3);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupSeconds = 1;
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
const latencyEvents = Number(process.env.BENCH_LATENCY_EVENTS ?? 200);

/** Emits the request body; `customResponse` decides when the endpoint answers. */
const component = (customResponse: boolean) => `
export default {
  key: "bench-ingest-${customResponse ? "custom" : "queued"}",
  name: "Bench ingest ${customResponse ? "custom" : "queued"}",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: ${customResponse} } },
  async run(event) {
    this.$emit(event.body, { summary: "bench" });
    ${customResponse ? "this.http.respond({ status: 200, headers: { 'content-type': 'application/json' }, body: '{\"success\":true}' });" : ""}
  },
};`;

/** ~200 bytes of JSON, like a small webhook. */
const body = (seq: number) =>
  JSON.stringify({ seq, type: "order.created", order: { id: `ord_${seq}`, total: 4210, currency: "EUR", items: [{ sku: "A-1", qty: 2 }] }, note: "x".repeat(60) });

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
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function post(agent: http.Agent, url: URL, payload: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
    }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(payload);
  });
}

/** `concurrency` keep-alive connections, each sending its next request when the last one is answered. */
async function load(target: string, seq: { next: number }): Promise<LoadResult> {
  const url = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const started = performance.now();
  const measureFrom = started + warmupSeconds * 1000;
  const end = measureFrom + seconds * 1000;
  const latencies: number[] = [];
  let accepted = 0;
  let failed = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const sent = performance.now();
      let status = 0;
      try {
        status = await post(agent, url, body(seq.next++));
      } catch {
        status = 0;
      }
      const answered = performance.now();
      if (status === 200) accepted++;
      else failed++;
      if (sent >= measureFrom && answered <= end && status === 200) latencies.push(answered - sent);
    }
  }));
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
    const status = await post(agent, url, body(n));
    if (status !== 200) throw new Error(`POST answered ${status}`);
    await until(`event ${n} on SSE`, () => watcher.arrivals.has(n), 30_000);
    latencies.push(watcher.arrivals.get(n)! - sent);
  }
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function startPlainKoa(): Promise<{ url: string; child: ChildProcess }> {
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), "plainKoa.js");
  const child = spawn(process.execPath, [entry], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      const match = /listening (\d+)/.exec(chunk.toString());
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`plain Koa exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/e/plain`, child };
}

interface Sample {
  koa: LoadResult;
  queued: LoadResult & { drainSeconds: number; runsPerSecond: number };
  custom: LoadResult;
  sseQueued: { p50: number; p99: number };
  sseCustom: { p50: number; p99: number };
}

async function oneRun(): Promise<Sample> {
  const koa = await startPlainKoa();
  const server = new TestServer({
    env: { HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000000", HEADWATER_ENDPOINT_BURST: "1000000" },
  });
  await server.start(60_000);
  try {
    const admin = server.client();
    const create = async (customResponse: boolean) => {
      const r = await admin.post("/v1/sources", { component_code: component(customResponse), name: customResponse ? "custom" : "queued" });
      if (r.status !== 200) throw new Error(`creating a source: ${r.status} ${JSON.stringify(r.body)}`);
      return { id: r.body.data.id as string, endpoint: r.body.data.configured_props.http.endpoint_url as string };
    };
    const queued = await create(false);
    const custom = await create(true);
    const queuedWatch = watch(`${server.url}/sources/${queued.id}/sse`, server.bootstrapKey);
    const customWatch = watch(`${server.url}/sources/${custom.id}/sse`, server.bootstrapKey);
    await Promise.all([queuedWatch.opened(), customWatch.opened()]);

    const koaResult = await load(koa.url, { next: 0 });

    // Queued: answers once the invocation is durably queued; the runs drain afterwards.
    const queuedSeq = { next: 0 };
    const loadStarted = performance.now();
    const queuedResult = await load(queued.endpoint, queuedSeq);
    const loadEnded = performance.now();
    await until("the queued runs to drain", () => queuedWatch.count >= queuedResult.accepted, 10 * 60_000);
    const drainSeconds = (queuedWatch.last - loadEnded) / 1000;
    const runsPerSecond = queuedResult.accepted / ((queuedWatch.last - loadStarted) / 1000);

    // Custom response: answers after the run ended and its event was appended.
    const customSeq = { next: 0 };
    const customResult = await load(custom.endpoint, customSeq);
    await until("the custom runs' events", () => customWatch.count >= customResult.accepted, 60_000);

    const sseQueued = await emitToSse(queued.endpoint, queuedWatch, queuedSeq);
    const sseCustom = await emitToSse(custom.endpoint, customWatch, customSeq);
    queuedWatch.es.close();
    customWatch.es.close();
    return { koa: koaResult, queued: { ...queuedResult, drainSeconds, runsPerSecond }, custom: customResult, sseQueued, sseCustom };
  } finally {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
    koa.child.kill("SIGTERM");
  }
}

const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
console.log(`machine: ${cpus().length} cpus (${cpuModel}), node ${process.version}, ${new Date().toISOString()}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
console.log(`runs: ${runs} (medians); ${concurrency} connections, ${warmupSeconds} s warm-up + ${seconds} s measured per load; ${latencyEvents} sequential events for emit-to-SSE`);

const samples: Sample[] = [];
for (let i = 0; i < runs; i++) {
  const s = await oneRun();
  samples.push(s);
  const f = (r: LoadResult) => `${Math.round(r.rps)} req/s p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms${r.failed ? ` (${r.failed} failed)` : ""}`;
  console.log(`run ${i + 1}: koa ${f(s.koa)} | queued ${f(s.queued)}, runs ${Math.round(s.queued.runsPerSecond)}/s, drained ${s.queued.drainSeconds.toFixed(1)} s after the load | custom ${f(s.custom)} | emit-to-SSE queued p50 ${s.sseQueued.p50.toFixed(1)} p99 ${s.sseQueued.p99.toFixed(1)} ms, custom p50 ${s.sseCustom.p50.toFixed(1)} p99 ${s.sseCustom.p99.toFixed(1)} ms`);
}

const m = (pick: (s: Sample) => number) => median(samples.map(pick));
const koaRps = m((s) => s.koa.rps);
const row = (name: string, rps: number, p50: number, p99: number) =>
  `| ${name} | ${Math.round(rps).toLocaleString("en")} | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ${(rps / koaRps).toFixed(2)} |`;
console.log("\n| target | requests/s | p50 ms | p99 ms | / plain Koa |");
console.log("|---|---|---|---|---|");
console.log(row("plain Koa (ceiling)", koaRps, m((s) => s.koa.p50), m((s) => s.koa.p99)));
console.log(row("source, answer when queued", m((s) => s.queued.rps), m((s) => s.queued.p50), m((s) => s.queued.p99)));
console.log(row("source, custom response (answer after append)", m((s) => s.custom.rps), m((s) => s.custom.p50), m((s) => s.custom.p99)));
console.log(`\nqueued source: runs completed end to end ${Math.round(m((s) => s.queued.runsPerSecond))}/s; backlog drained ${m((s) => s.queued.drainSeconds).toFixed(1)} s after the load stopped`);
console.log(`emit-to-SSE (POST sent -> event on EventSource, one at a time): queued p50 ${m((s) => s.sseQueued.p50).toFixed(1)} ms p99 ${m((s) => s.sseQueued.p99).toFixed(1)} ms; custom response p50 ${m((s) => s.sseCustom.p50).toFixed(1)} ms p99 ${m((s) => s.sseCustom.p99).toFixed(1)} ms`);
