// Many sources at a steady trickle: `npm run bench:many-sources`. A real `headwater start`
// process (embedded default) with BENCH_SOURCES sources (default 10,000) spread over BENCH_USERS
// users (default 100), each source receiving one request every BENCH_PERIOD_S seconds (default 5;
// so 2,000 req/s in all), open loop (sent on schedule whatever the answers) for BENCH_SECONDS
// (default 60). Every 5 s it reads /metrics: runs recorded (headwater_runs_total) and the node's
// backlog (headwater_backlog_invocations, admitted and not yet recorded). "No backlog" means the
// backlog stays flat during the load and drains at once after it. It also reads the CPU the
// server, its sandbox children and the bench process used per run, and the bytes the server wrote
// to storage per run, from /proc.
// BENCH_WARM_SOURCES and BENCH_WARM_ISOLATES set the server's HEADWATER_WARM_SOURCES and
// HEADWATER_WARM_ISOLATES; BENCH_RESULT names the result file (default many-sources.md). Before
// the load every source runs once (its cold start), unless BENCH_WARMUP=0.
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer } from "../test/harness/server.js";
import { benchServerEnv, inParallel, machineLine, request, sleep } from "./common.js";
import { add, minus, sample, type Cpu } from "./procStat.js";

const sourceCount = Number(process.env.BENCH_SOURCES ?? 10_000);
const userCount = Number(process.env.BENCH_USERS ?? 100);
const periodS = Number(process.env.BENCH_PERIOD_S ?? 5);
const seconds = Number(process.env.BENCH_SECONDS ?? 60);
/** HEADWATER_WARM_SOURCES and HEADWATER_WARM_ISOLATES for the server (default: the server's). */
const warmSources = process.env.BENCH_WARM_SOURCES;
const warmIsolates = process.env.BENCH_WARM_ISOLATES;
/** Result file name under bench/results (default many-sources.md). */
const resultFile = process.env.BENCH_RESULT ?? "many-sources.md";
/** BENCH_WARMUP=0: the load starts on sources that never ran (each run of the first period is a cold start). */
const warmup = process.env.BENCH_WARMUP !== "0";
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

const componentCode = `
export default {
  key: "bench-many",
  name: "Bench many sources",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    this.$emit(event.body, { summary: "many" });
  },
};`;

interface Sample {
  readonly at: number;
  readonly sent: number;
  readonly accepted: number;
  readonly refused: number;
  readonly runs: number;
  readonly backlog: number;
  /** Runs in the sandbox that had to make the source's context (cold starts). */
  readonly cold: number;
}

/** RSS in MB of a process and its children (the server and its sandbox children). */
function treeRssMb(pid: number): number {
  const out = execFileSync("ps", ["-o", "rss=", "-p", String(pid), "--ppid", String(pid)], { encoding: "utf8" });
  return out.split("\n").reduce((sum, line) => sum + (Number(line.trim()) || 0), 0) / 1024;
}

function metric(text: string, name: string, labels = ""): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || line.startsWith("#")) continue;
    if (labels && !line.includes(labels)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== " " && rest[0] !== "{") continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

async function main(): Promise<void> {
  const machine = machineLine();
  console.log(`machine: ${machine}`);
  const server = new TestServer({
    mode: "embedded",
    env: {
      ...benchServerEnv,
      ...(warmSources !== undefined ? { HEADWATER_WARM_SOURCES: warmSources } : {}),
      ...(warmIsolates !== undefined ? { HEADWATER_WARM_ISOLATES: warmIsolates } : {}),
    },
  });
  await server.start(60_000);
  const endpoints: string[] = [];
  const samples: Sample[] = [];
  try {
    const perUser = Math.ceil(sourceCount / userCount);
    const deployStarted = performance.now();
    for (let u = 0; u < userCount && endpoints.length < sourceCount; u++) {
      const username = `many${u}`;
      const created = server.cli("admin", "user", "create", "--username", username, "--email", `${username}@example.com`, "--plan", "paid");
      if (created.status !== 0) throw new Error(`creating a user: ${created.stderr}`);
      const key = created.json.api_key as string;
      const saved = await request("POST", `${server.url}/v1/components`, key, { component_code: componentCode });
      if (saved.status !== 200) throw new Error(`saving the component: ${saved.status} ${JSON.stringify(saved.body)}`);
      const n = Math.min(perUser, sourceCount - endpoints.length);
      await inParallel(
        Array.from({ length: n }, (_, i) => i),
        16,
        async (i) => {
          const r = await request("POST", `${server.url}/v1/sources`, key, { component_id: saved.body.data.id, name: `many-${u}-${i}` });
          if (r.status !== 200) throw new Error(`deploying: ${r.status} ${JSON.stringify(r.body)}`);
          endpoints.push(r.body.data.configured_props.http.endpoint_url as string);
        },
      );
    }
    const deploySeconds = (performance.now() - deployStarted) / 1000;
    console.log(`${endpoints.length} sources of ${userCount} users deployed in ${deploySeconds.toFixed(1)} s`);

    const operator = server.bootstrapKey;
    let sent = 0;
    let accepted = 0;
    let refused = 0;
    let failed = 0;
    /** The client's counts when asked, the node's as its scrape found them (which can take a while under load). */
    const read = async (at: number): Promise<Sample> => {
      const counts = { sent, accepted, refused };
      const r = await request("GET", `${server.url}/metrics`, operator);
      const text = String(r.body);
      return {
        at,
        ...counts,
        runs: metric(text, "headwater_runs_total", 'trigger="http"'),
        backlog: metric(text, "headwater_backlog_invocations"),
        cold: metric(text, "headwater_sandbox_runs_total", 'start="cold"'),
      };
    };
    // Warm-up: every source runs once (its cold start) before the load, so the load measures a
    // node that has been serving its sources, not its first minute after a start.
    let warmupSeconds = NaN;
    if (warmup) {
      const warmupStarted = performance.now();
      const runsBefore = (await read(0)).runs;
      await inParallel(endpoints, 64, async (url, i) => {
        const r = await request("POST", url, undefined, { seq: -i, at: Date.now() });
        if (r.status !== 200) throw new Error(`warm-up request: ${r.status} ${JSON.stringify(r.body)}`);
      });
      for (;;) {
        const s = await read(0);
        if (s.runs - runsBefore >= endpoints.length && s.backlog === 0) break;
        await sleep(250);
      }
      warmupSeconds = (performance.now() - warmupStarted) / 1000;
      console.log(`warm-up: every source ran once in ${warmupSeconds.toFixed(1)} s`);
    }
    const before = await read(0);
    const cpuBefore = sample(server.pid!);
    const benchBefore = process.cpuUsage();
    const rate = endpoints.length / periodS;
    const started = performance.now();
    const inFlight = new Set<Promise<void>>();
    let sampledAt = 0;
    // Read without holding up the sending: a scrape of a loaded node can take seconds.
    const sampling: Promise<void>[] = [];
    // Open loop: the n-th request is due at n / rate seconds, to source n mod count.
    while (performance.now() - started < seconds * 1000) {
      const elapsed = (performance.now() - started) / 1000;
      const due = Math.floor(elapsed * rate);
      while (sent < due) {
        const url = endpoints[sent % endpoints.length];
        sent++;
        const p = request("POST", url, undefined, { seq: sent, at: Date.now() }).then(
          (r) => {
            if (r.status === 200) accepted++;
            else refused++;
          },
          () => {
            failed++;
          },
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      if (elapsed - sampledAt >= 5) {
        sampledAt = Math.floor(elapsed / 5) * 5;
        sampling.push(read(Math.round(elapsed)).then((s) => void samples.push(s)));
      }
      await sleep(2);
    }
    const loadEnded = performance.now();
    const unanswered = inFlight.size;
    const answeredInLoad = accepted + refused;
    const rssMb = treeRssMb(server.pid!);
    await Promise.all([...inFlight, ...sampling]);
    samples.sort((a, b) => a.at - b.at);
    let drained = NaN;
    for (;;) {
      const sample = await read(Math.round((performance.now() - started) / 1000));
      if (sample.runs - before.runs >= accepted && sample.backlog === 0) {
        drained = (performance.now() - loadEnded) / 1000;
        samples.push(sample);
        break;
      }
      if (performance.now() - loadEnded > 300_000) {
        samples.push(sample);
        break;
      }
      await sleep(250);
    }
    const cpuAfter = sample(server.pid!);
    const benchCpu = process.cpuUsage(benchBefore);
    const last = samples[samples.length - 1];
    const runs = last.runs - before.runs;
    const perRun = (cpu: Cpu) =>
      `${Math.round(((cpu.userMs + cpu.systemMs) * 1000) / Math.max(1, runs))} (${Math.round((cpu.systemMs * 1000) / Math.max(1, runs))})`;
    const main = minus(cpuAfter.main, cpuBefore.main);
    const threads = minus(cpuAfter.otherThreads, cpuBefore.otherThreads);
    const children = minus(cpuAfter.children, cpuBefore.children);
    const rows = samples.map(
      (s) =>
        `| ${s.at} | ${s.sent.toLocaleString("en")} | ${s.accepted.toLocaleString("en")} | ${s.refused.toLocaleString("en")} | ${(s.runs - before.runs).toLocaleString("en")} | ${(s.cold - before.cold).toLocaleString("en")} | ${s.backlog.toLocaleString("en")} |`,
    );
    const report = [
      "# Many sources at a steady trickle",
      "",
      "Command: `npm run bench:many-sources` (bench/manySources.ts). Written by the bench; the reading at the end, if any, by hand.",
      "",
      `Machine: ${machine}.`,
      "",
      `Load: ${endpoints.length.toLocaleString("en")} sources of ${userCount} users (deployed in ${deploySeconds.toFixed(1)} s), each receiving one ~40-byte JSON request every ${periodS} s: ${Math.round(rate).toLocaleString("en")} req/s in all, sent on schedule (open loop, keep-alive, 64 sockets) for ${seconds} s from the bench process. The source emits its request body. ${warmup ? `Before the load, every source ran once (warm-up, ${warmupSeconds.toFixed(1)} s: their cold starts).` : "No warm-up (BENCH_WARMUP=0): the load starts on sources that never ran."}`,
      "",
      `- sent ${sent.toLocaleString("en")} (${unanswered.toLocaleString("en")} of them not yet answered when the load ended: requests waiting in the client's 64 sockets), accepted ${accepted.toLocaleString("en")} (${((100 * accepted) / Math.max(1, sent)).toFixed(1)} %), refused (429/503) ${refused.toLocaleString("en")}, connection errors ${failed}`,
      `- runs recorded ${runs.toLocaleString("en")}, of them cold starts (the source's sandbox context made anew) ${(last.cold - before.cold).toLocaleString("en")}; runs/s over the load and its drain ${(runs / ((loadEnded - started) / 1000 + (Number.isFinite(drained) ? drained : 0))).toFixed(0)}; requests sent ${(sent / ((loadEnded - started) / 1000)).toFixed(0)}/s and answered ${(answeredInLoad / ((loadEnded - started) / 1000)).toFixed(0)}/s during the load`,
      `- RSS of the server and its sandbox children at the end of the load: ${rssMb.toFixed(0)} MB; warm sources per sandbox child: ${warmSources ?? "the default"}, isolates: ${warmIsolates ?? "the default"}`,
      `- CPU per run recorded, in µs (kernel's part in parentheses), from the load's start to the drain's end (/proc): the server's event loop ${perRun(main)}, its other threads ${perRun(threads)}, its sandbox children ${perRun(children)}, in all ${perRun(add(add(main, threads), children))}; the bench process (the load generator) ${perRun({ userMs: benchCpu.user / 1000, systemMs: benchCpu.system / 1000 })}`,
      `- written to storage by the server process (its SQLite files: the log, the bus, the read models; /proc/<pid>/io write_bytes), from the load's start to the drain's end: ${((cpuAfter.io.writeBytes - cpuBefore.io.writeBytes) / 1024 / Math.max(1, runs)).toFixed(1)} KB per run`,
      `- backlog drained ${Number.isFinite(drained) ? `${drained.toFixed(1)} s after the load ended` : "NOT within 300 s"}`,
      "",
      "Every 5 s: the client's requests sent, accepted and refused by then; from /metrics, as the scrape found them: runs recorded since the start and how many of them were cold starts, and the node's backlog of admitted, not yet recorded invocations (the last row: when the backlog had drained).",
      "",
      "| s | sent | accepted | refused | runs recorded | of them cold starts | backlog |",
      "|---|---|---|---|---|---|---|",
      ...rows,
      "",
    ].join("\n");
    console.log(`\n${report}`);
    const file = path.join(repoRoot, "bench", "results", resultFile);
    writeFileSync(file, report);
    console.log(`written to ${path.relative(repoRoot, file)}`);
  } finally {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
}

await main();
