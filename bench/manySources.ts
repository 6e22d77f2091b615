// Many sources at a steady trickle: `npm run bench:many-sources`. A real `headwater start`
// process (embedded default) with BENCH_SOURCES sources (default 10,000) spread over BENCH_USERS
// users (default 100), each source receiving one request every BENCH_PERIOD_S seconds (default 5;
// so 2,000 req/s in all), open loop (sent on schedule whatever the answers) for BENCH_SECONDS
// (default 60). Every 5 s it reads /metrics: runs recorded (headwater_runs_total) and the node's
// backlog (headwater_backlog_invocations, admitted and not yet recorded). "No backlog" means the
// backlog stays flat during the load and drains at once after it. BENCH_WARM_ISOLATES sets the
// server's HEADWATER_WARM_ISOLATES; BENCH_RESULT names the result file (default many-sources.md).
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer } from "../test/harness/server.js";
import { benchServerEnv, inParallel, machineLine, request, sleep } from "./common.js";

const sourceCount = Number(process.env.BENCH_SOURCES ?? 10_000);
const userCount = Number(process.env.BENCH_USERS ?? 100);
const periodS = Number(process.env.BENCH_PERIOD_S ?? 5);
const seconds = Number(process.env.BENCH_SECONDS ?? 60);
/** HEADWATER_WARM_ISOLATES for the server (default: the server's, 64 per sandbox child). */
const warmIsolates = process.env.BENCH_WARM_ISOLATES;
/** Result file name under bench/results (default many-sources.md). */
const resultFile = process.env.BENCH_RESULT ?? "many-sources.md";
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
    const read = async (at: number): Promise<Sample> => {
      const r = await request("GET", `${server.url}/metrics`, operator);
      const text = String(r.body);
      return {
        at,
        sent,
        accepted,
        refused,
        runs: metric(text, "headwater_runs_total", 'trigger="http"'),
        backlog: metric(text, "headwater_backlog_invocations"),
      };
    };
    const before = await read(0);
    const rate = endpoints.length / periodS;
    const started = performance.now();
    const inFlight = new Set<Promise<void>>();
    let sampledAt = 0;
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
        samples.push(await read(Math.round(elapsed)));
      }
      await sleep(2);
    }
    const loadEnded = performance.now();
    const rssMb = treeRssMb(server.pid!);
    await Promise.all([...inFlight]);
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
    const last = samples[samples.length - 1];
    const runs = last.runs - before.runs;
    const rows = samples.map(
      (s) =>
        `| ${s.at} | ${s.sent.toLocaleString("en")} | ${s.accepted.toLocaleString("en")} | ${s.refused.toLocaleString("en")} | ${(s.runs - before.runs).toLocaleString("en")} | ${s.backlog.toLocaleString("en")} |`,
    );
    const report = [
      "# Many sources at a steady trickle",
      "",
      "Command: `npm run bench:many-sources` (bench/manySources.ts). Written by the bench; the reading at the end, if any, by hand.",
      "",
      `Machine: ${machine}.`,
      "",
      `Load: ${endpoints.length.toLocaleString("en")} sources of ${userCount} users (deployed in ${deploySeconds.toFixed(1)} s), each receiving one ~40-byte JSON request every ${periodS} s: ${Math.round(rate).toLocaleString("en")} req/s in all, sent on schedule (open loop, keep-alive, 64 sockets) for ${seconds} s from the bench process. The source emits its request body.`,
      "",
      `- sent ${sent.toLocaleString("en")}, accepted ${accepted.toLocaleString("en")} (${((100 * accepted) / Math.max(1, sent)).toFixed(1)} %), refused (429/503) ${refused.toLocaleString("en")}, connection errors ${failed}`,
      `- runs recorded ${runs.toLocaleString("en")}; runs/s over the load ${(runs / ((loadEnded - started) / 1000 + (Number.isFinite(drained) ? drained : 0))).toFixed(0)} against ${(accepted / ((loadEnded - started) / 1000)).toFixed(0)} accepted req/s`,
      `- RSS of the server and its sandbox children at the end of the load: ${rssMb.toFixed(0)} MB; warm isolates per sandbox child: ${warmIsolates ?? "64 (default)"}`,
      `- backlog drained ${Number.isFinite(drained) ? `${drained.toFixed(1)} s after the load ended` : "NOT within 300 s"}`,
      "",
      "Every 5 s (from /metrics: runs recorded since the start, and the node's backlog of admitted, not yet recorded invocations):",
      "",
      "| s | sent | accepted | refused | runs recorded | backlog |",
      "|---|---|---|---|---|---|",
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
