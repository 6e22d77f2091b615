// One node at scale: `npm run bench:scale` (embedded default, a real `headwater start` process on
// a fresh data directory). In one run:
// - idle memory (RSS of the server and its runner children) as sources are deployed through the
//   API (parallel POST /v1/sources of one saved component; every deploy is a command on the log),
//   at 2,000 and 10,000 sources and as far toward BENCH_SOURCES as BENCH_DEPLOY_SECONDS allows;
// - listing latency: GET /v1/users/me/sources at 100 sources vs at the end; GET
//   /v1/sources/{id}/event_summaries at 1,000 stored events vs after every deployed source (up to
//   BENCH_EVENT_SOURCES) received one request emitting 100 events;
// - emit → BENCH_SSE_CLIENTS (default 1,000) SSE clients: p99 of (event on a client - POST sent);
// - `headwater projections rebuild` on the resulting log: events/s (BENCH_REBUILD_PROFILE=dir: with
//   a CPU profile written there).
import { readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { TestServer, cliEntry } from "../test/harness/server.js";
import { benchAgent, benchServerEnv, inParallel, machineLine, request, sleep } from "./common.js";

const targetSources = Number(process.env.BENCH_SOURCES ?? 100_000);
const deployBudgetMs = Number(process.env.BENCH_DEPLOY_SECONDS ?? 240) * 1000;
const eventSources = Number(process.env.BENCH_EVENT_SOURCES ?? 10_000);
const sseClients = Number(process.env.BENCH_SSE_CLIENTS ?? 1_000);
const sseEvents = Number(process.env.BENCH_SSE_EVENTS ?? 30);
const parallel = Number(process.env.BENCH_PARALLEL ?? 16);
/** A directory for a CPU profile of the rebuild (node --cpu-prof), when set. */
const profileDir = process.env.BENCH_REBUILD_PROFILE;
const samples = 200;
const warmup = 20;
const checkpoints = [100, 2_000, 10_000, 20_000, 50_000, 100_000];

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** A source that emits `n` events (default 1) per request, each carrying the request's `seq`. */
const componentCode = `
export default {
  key: "bench-scale",
  name: "Bench scale",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    const body = event.body || {};
    const n = Math.min(Number(body.n) || 1, 100);
    for (let i = 0; i < n; i++) this.$emit({ seq: body.seq, i }, { summary: "scale" });
  },
};`;

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/** RSS in bytes of a process and all its descendants (the server and its runner children). */
function treeRss(pid: number): number {
  let total = 0;
  const visit = (p: number) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, "utf8");
      total += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
      for (const task of readdirSync(`/proc/${p}/task`)) {
        const children = readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim();
        for (const child of children ? children.split(/\s+/) : []) visit(Number(child));
      }
    } catch {
      // exited meanwhile
    }
  };
  visit(pid);
  return total;
}

/** Median of five samples a second apart, after 3 s of quiet: RSS moves with the garbage collector. */
async function settledRss(pid: number): Promise<number> {
  await sleep(3000);
  const values: number[] = [];
  for (let i = 0; i < 5; i++) {
    values.push(treeRss(pid));
    await sleep(1000);
  }
  return percentile(
    values.sort((a, b) => a - b),
    50,
  );
}

/** Median and p99 of `samples` sequential GETs. */
async function latency(url: string, key: string): Promise<{ median: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples + warmup; i++) {
    const started = performance.now();
    const r = await request("GET", url, key);
    if (r.status !== 200) throw new Error(`GET ${url}: ${r.status} ${JSON.stringify(r.body)}`);
    if (i >= warmup) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { median: percentile(times, 50), p99: percentile(times, 99) };
}

async function main(): Promise<void> {
  const machine = machineLine();
  console.log(`machine: ${machine}`);
  const server = new TestServer({
    mode: "embedded",
    env: {
      ...benchServerEnv,
    },
  });
  await server.start(60_000);
  const key = server.bootstrapKey;
  const lines: string[] = [];
  const note = (line: string) => {
    console.log(line);
    lines.push(line);
  };
  try {
    const baseRss = await settledRss(server.pid!);
    note(`- RSS with no source: ${(baseRss / 2 ** 20).toFixed(1)} MB`);

    const saved = await request("POST", `${server.url}/v1/components`, key, { component_code: componentCode });
    if (saved.status !== 200) throw new Error(`saving the component: ${saved.status} ${JSON.stringify(saved.body)}`);
    const componentId = saved.body.data.id as string;

    const sources: { id: string; endpoint: string }[] = [];
    const rss: { sources: number; bytes: number; deployPerSecond: number }[] = [];
    let sourceListing100: { median: number; p99: number } | undefined;
    let eventListing1000: { median: number; p99: number } | undefined;
    const deployStarted = performance.now();
    let deploySeconds = 0;
    let made = 0;
    const deployTo = async (n: number) => {
      const from = sources.length;
      const started = performance.now();
      await inParallel(
        Array.from({ length: n - from }, (_, i) => from + i),
        parallel,
        async () => {
          if (performance.now() - deployStarted > deployBudgetMs) return;
          const r = await request("POST", `${server.url}/v1/sources`, key, { component_id: componentId, name: `scale-${made++}` });
          if (r.status !== 200) throw new Error(`deploying: ${r.status} ${JSON.stringify(r.body)}`);
          sources.push({ id: r.body.data.id as string, endpoint: r.body.data.configured_props.http.endpoint_url as string });
        },
      );
      const took = (performance.now() - started) / 1000;
      deploySeconds += took;
      return (sources.length - from) / took;
    };
    /** POSTs one request emitting `n` events to each source, then waits until every one lists them. */
    const emitInto = async (targets: readonly { id: string; endpoint: string }[], n: number) => {
      const started = performance.now();
      await inParallel(targets, 32, async (s, i) => {
        for (;;) {
          const r = await request("POST", s.endpoint, undefined, { n, seq: i });
          if (r.status === 200) return;
          if (r.status !== 429 && r.status !== 503) throw new Error(`POST endpoint: ${r.status} ${JSON.stringify(r.body)}`);
          await sleep(100);
        }
      });
      const accepted = performance.now();
      for (const s of targets) {
        for (;;) {
          const r = await request("GET", `${server.url}/v1/sources/${s.id}/event_summaries?limit=1`, key);
          if (r.status === 200 && (r.body.page_info?.total_count ?? 0) >= n) break;
          await sleep(50);
        }
      }
      return { acceptSeconds: (accepted - started) / 1000, seconds: (performance.now() - started) / 1000 };
    };

    for (const checkpoint of checkpoints) {
      if (checkpoint > targetSources) break;
      if (checkpoint > 100 && performance.now() - deployStarted > deployBudgetMs) {
        break;
      }
      const rate = await deployTo(checkpoint);
      const bytes = await settledRss(server.pid!);
      rss.push({ sources: sources.length, bytes, deployPerSecond: rate });
      note(
        `- ${sources.length.toLocaleString("en")} sources: RSS ${(bytes / 2 ** 20).toFixed(1)} MB (deployed at ${rate.toFixed(0)}/s through the API, ${parallel} in parallel)`,
      );
      if (checkpoint === 100) {
        sourceListing100 = await latency(`${server.url}/v1/users/me/sources`, key);
        const e = await emitInto(sources.slice(0, 10), 100);
        note(`- 1,000 events emitted into 10 sources (10 requests of 100 emits) and listed in ${e.seconds.toFixed(1)} s`);
        eventListing1000 = await latency(`${server.url}/v1/sources/${sources[0].id}/event_summaries`, key);
      }
    }
    const deployed = sources.length;
    note(
      `- deployed ${deployed.toLocaleString("en")} sources in ${deploySeconds.toFixed(0)} s of deploying (budget ${deployBudgetMs / 1000} s)`,
    );
    const sourceListingMany = await latency(`${server.url}/v1/users/me/sources`, key);

    const more = sources.slice(10, Math.min(deployed, eventSources));
    const e = await emitInto(more, 100);
    const storedEvents = 1_000 + more.length * 100;
    note(
      `- ${(more.length * 100).toLocaleString("en")} more events: ${more.length.toLocaleString("en")} requests of 100 emits accepted in ${e.acceptSeconds.toFixed(1)} s, all listed after ${e.seconds.toFixed(1)} s (${((more.length * 100) / e.seconds).toFixed(0)} events/s end to end)`,
    );
    const eventListingMany = await latency(`${server.url}/v1/sources/${sources[0].id}/event_summaries`, key);

    // Emit → many SSE clients on one source. Each client is a bare streaming GET that only splits
    // frames and reads the seq: an EventSource per client (full parser, JSON.parse, DOM events)
    // costs enough that 1,000 of them in one process mostly measure the bench's own event loop.
    const target = sources[1];
    const arrivals = new Map<number, number[]>();
    const clients: http.ClientRequest[] = [];
    await inParallel(
      Array.from({ length: sseClients }, (_, i) => i),
      50,
      (_, i) =>
        new Promise<void>((resolve, reject) => {
          const req = http.get(
            `${server.url}/sources/${target.id}/sse`,
            { agent: false, headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } },
            (response) => {
              if (response.statusCode !== 200) return reject(new Error(`SSE client ${i}: ${response.statusCode}`));
              resolve();
              let buffered = "";
              response.setEncoding("utf8");
              response.on("data", (chunk: string) => {
                const at = performance.now();
                buffered += chunk;
                const frames = buffered.split("\n\n");
                buffered = frames.pop() ?? "";
                for (const frame of frames) {
                  const seq = Number(/"seq":(\d+)/.exec(frame)?.[1] ?? NaN);
                  if (seq >= 1_000_000) {
                    const list = arrivals.get(seq) ?? [];
                    list.push(at);
                    arrivals.set(seq, list);
                  }
                }
              });
            },
          );
          req.on("error", reject);
          clients.push(req);
        }),
    );
    await sleep(1000);
    const sseLatencies: number[] = [];
    let missing = 0;
    for (let i = 0; i < sseEvents; i++) {
      const seq = 1_000_000 + i;
      const sent = performance.now();
      const r = await request("POST", target.endpoint, undefined, { n: 1, seq });
      if (r.status !== 200) throw new Error(`POST endpoint: ${r.status}`);
      const deadline = performance.now() + 10_000;
      while ((arrivals.get(seq)?.length ?? 0) < sseClients && performance.now() < deadline) await sleep(2);
      const got = arrivals.get(seq) ?? [];
      missing += sseClients - got.length;
      for (const at of got) sseLatencies.push(at - sent);
      await sleep(100);
    }
    for (const req of clients) req.destroy();
    sseLatencies.sort((a, b) => a - b);

    await server.stop();
    const logBytes = readdirSync(server.dataDir)
      .filter((f) => f.startsWith("events.db"))
      .reduce((sum, f) => sum + statSync(path.join(server.dataDir, f)).size, 0);
    const rebuilt = spawnSync(
      process.execPath,
      ["--no-node-snapshot", ...(profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : []), cliEntry, "projections", "rebuild"],
      { env: server.env, encoding: "utf8" },
    );
    if (rebuilt.status !== 0) throw new Error(`projections rebuild: ${rebuilt.stderr}`);
    const { position, ms } = JSON.parse(rebuilt.stdout) as { position: number; ms: number };

    // Report.
    const mb = (b: number) => (b / 2 ** 20).toFixed(1);
    const out: string[] = [];
    out.push(
      "# Scale benchmark (one node, embedded default)",
      "",
      "Command: `npm run bench:scale` (bench/scale.ts). Tables written by the bench; the reading at the end, if any, by hand.",
      "",
      `Machine: ${machine}.`,
      "",
      `Settings: BENCH_SOURCES=${targetSources}, BENCH_DEPLOY_SECONDS=${deployBudgetMs / 1000}, BENCH_EVENT_SOURCES=${eventSources}, BENCH_SSE_CLIENTS=${sseClients}, BENCH_PARALLEL=${parallel}. Latencies: ${samples} sequential GETs after ${warmup} warm-up, on keep-alive.`,
      "",
      "## Idle memory of deployed sources (RSS of the server process and its runner children)",
      "",
      "| sources | RSS MB | MB above no source | KB per source | deploys/s (API) |",
      "|---|---|---|---|---|",
      `| 0 | ${mb(baseRss)} | 0 | – | – |`,
      ...rss.map(
        (r) =>
          `| ${r.sources.toLocaleString("en")} | ${mb(r.bytes)} | ${mb(r.bytes - baseRss)} | ${((r.bytes - baseRss) / 1024 / r.sources).toFixed(1)} | ${r.deployPerSecond.toFixed(0)} |`,
      ),
      "",
    );
    const first = rss.find((r) => r.sources === 2_000) ?? rss[0];
    const lastRss = rss[rss.length - 1];
    if (lastRss.sources < 100_000 && first !== lastRss) {
      const slope = (lastRss.bytes - first.bytes) / (lastRss.sources - first.sources);
      const at100k = lastRss.bytes + slope * (100_000 - lastRss.sources);
      out.push(
        `Extrapolated to 100,000 sources (linear from ${first.sources.toLocaleString("en")} to ${lastRss.sources.toLocaleString("en")}: ${(slope / 1024).toFixed(1)} KB per source): **${mb(at100k)} MB** (goal < 1,024 MB). Deploying 100,000 through the API at the measured rate would take ${((100_000 - lastRss.sources) / lastRss.deployPerSecond / 60).toFixed(0)} more minutes.`,
        "",
      );
    }
    const row = (name: string, a: { median: number; p99: number }, b: { median: number; p99: number }, aLabel: string, bLabel: string) =>
      `| ${name} | ${aLabel}: ${a.median.toFixed(2)} / ${a.p99.toFixed(2)} | ${bLabel}: ${b.median.toFixed(2)} / ${b.p99.toFixed(2)} | ${(b.median / a.median).toFixed(2)}× |`;
    out.push(
      "## Listing latency (median / p99 ms, same run)",
      "",
      "| listing | small | large | growth (median) |",
      "|---|---|---|---|",
      row(
        "GET /v1/users/me/sources (first page)",
        sourceListing100!,
        sourceListingMany,
        "100 sources",
        `${deployed.toLocaleString("en")} sources`,
      ),
      row(
        `GET /v1/sources/{id}/event_summaries (first page)`,
        eventListing1000!,
        eventListingMany,
        "1,000 stored events",
        `${storedEvents.toLocaleString("en")} stored events`,
      ),
      "",
      "## Emit → SSE fan-out",
      "",
      `${sseClients.toLocaleString("en")} SSE clients (a streaming GET each, own connection, all in the bench process, frames split and the seq read, no EventSource parser) on one source; ${sseEvents} events POSTed one at a time; latency = event on a client - POST sent, over every (event, client): p50 ${percentile(sseLatencies, 50).toFixed(1)} ms, **p99 ${percentile(sseLatencies, 99).toFixed(1)} ms**, max ${sseLatencies[sseLatencies.length - 1]?.toFixed(1)} ms${missing ? `; ${missing} arrivals missing after 10 s` : ""} (goal p99 < 100 ms).`,
      "",
      "## Projections rebuild",
      "",
      `\`headwater projections rebuild\` on the log this run left (${position.toLocaleString("en")} events, ${mb(logBytes)} MB of SQLite files): ${ms} ms, **${Math.round(position / (ms / 1000)).toLocaleString("en")} events/s** (goal ≥ 300,000 events/s on 1,000,000 events).`,
      "",
      "## Progress log",
      "",
      ...lines,
      "",
    );
    const report = out.join("\n");
    console.log(`\n${report}`);
    writeFileSync(path.join(repoRoot, "bench", "results", "scale.md"), report);
  } finally {
    await server.stop();
    benchAgent.destroy();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
}

await main();
