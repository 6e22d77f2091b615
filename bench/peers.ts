// Headwater beside its peers, one run, one machine state: `npm run bench:peers`.
// A Koa app that parses the body and answers, a Node-RED 4.1.8 flow (http in → function → http
// response; installed at bench time into .cache/node-red, never into the project), and a real
// `headwater start` process on a fresh data directory: answered when queued (with the runs
// followed to their events, so the end-to-end run rate and the backlog drain are measured too)
// and custom response (run, event durably appended, then answered). autocannon drives every load
// from a process of its own (bench/loadgen.ts).
// BENCH_MODE=scaled: Headwater on PostgreSQL (127.0.0.1:5432) + Kafka (test harness broker).
// BENCH_SECONDS (default 8) per load, BENCH_ROUNDS (default 2), BENCH_CONNECTIONS (default 32),
// BENCH_DRAIN_TIMEOUT_S (default 300): longest wait for a queued backlog to drain.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { EventSource } from "eventsource";
import { TestServer, type TestMode } from "../test/harness/server.js";
import { stopSharedKafka } from "../test/harness/kafka.js";
import { dropTestSchemas } from "../test/harness/postgres.js";
import type { LoadOutcome } from "./loadgen.js";
import { installPeers, NODE_RED_VERSION, startNodeRed } from "./nodeRed.js";
import { apiOnlyNodeEnv, benchServerEnv, emitBodyComponent, machineLine, runLoad, startPlainKoa } from "./common.js";

const mode: TestMode = process.env.BENCH_MODE === "scaled" ? "scaled" : "embedded";
const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const drainTimeoutMs = Number(process.env.BENCH_DRAIN_TIMEOUT_S ?? 300) * 1000;
/** Sources spread over the invocation partitions (one source's runs are serial by design). */
const MANY = 16;

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(benchDir, "..", "..");
/** ~30 bytes of JSON, like the load. */
const body = JSON.stringify({ order: "ord_1234", total: 4210 });

function load(urls: readonly string[]): Promise<LoadOutcome> {
  return runLoad({ url: urls.length === 1 ? urls[0] : urls, connections, seconds, body });
}

/** Counts a source's events as they arrive on its SSE stream (the completed runs). */
function watch(sseUrl: string, key: string) {
  let count = 0;
  let last = 0;
  const es = new EventSource(sseUrl, {
    fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${key}` } }),
  });
  es.addEventListener("message", () => {
    count++;
    last = performance.now();
  });
  return {
    es,
    get count() {
      return count;
    },
    get last() {
      return last;
    },
    opened: () => new Promise<void>((resolve) => es.addEventListener("open", () => resolve(), { once: true })),
  };
}
type Watcher = ReturnType<typeof watch>;

async function until(probe: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!probe()) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

const serverEnv = benchServerEnv;

/**
 * The queued request path alone: a node with only the API role (in a deployment the runs happen on
 * runner nodes), so no run competes with it for the CPU. Its backlog bounds are lifted: nothing
 * here runs what it queues, so the bounds would soon answer 429. Killed right after the load.
 */
async function rawQueued(): Promise<LoadOutcome> {
  const server = new TestServer({ mode, env: { ...serverEnv, ...apiOnlyNodeEnv } });
  await server.start(120_000);
  try {
    const r = await server.client().post("/v1/sources", { component_code: component(false), name: "peers-raw" });
    if (r.status !== 200) throw new Error(`creating a source: ${r.status} ${JSON.stringify(r.body)}`);
    return await load([r.body.data.configured_props.http.endpoint_url as string]);
  } finally {
    await server.kill();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
}

const component = (customResponse: boolean) => emitBodyComponent("peers", customResponse);

interface Drained extends LoadOutcome {
  /** Runs completed (events seen) per second from the load's start to the last event. */
  readonly runsPerSecond: number;
  /** From the end of the load to the last event; NaN when the backlog did not drain in time. */
  readonly drainSeconds: number;
  readonly completed: number;
}

interface Round {
  koa: LoadOutcome;
  /** Answered when queued by an API-only node (runs elsewhere): the request path alone. */
  rawQueued: LoadOutcome;
  nodeRed: LoadOutcome;
  queued: Drained;
  queuedMany: Drained;
  custom: LoadOutcome;
  customMany: LoadOutcome;
}

async function main(): Promise<void> {
  installPeers();
  const machine = machineLine();
  console.log(`machine: ${machine}`);
  console.log(
    `mode: ${mode}; ${rounds} rounds, ${connections} connections, ${seconds} s per load, ${Buffer.byteLength(body)}-byte JSON body`,
  );

  const koa = await startPlainKoa();
  const nodeRed = await startNodeRed();
  const server = new TestServer({ mode, env: serverEnv });
  await server.start(120_000);
  const rows: Round[] = [];
  const watchers: Watcher[] = [];
  try {
    let made = 0;
    /**
     * The 16-source loads have 16 users, one source each: one user's sources share
     * HEADWATER_RUNS_PER_OWNER run slots per node (4 by default, the fairness bound), so 16 sources
     * of one user would measure that policy rather than the node.
     */
    const userKey = (): string => {
      const username = `peers${made}`;
      const created = server.cli("admin", "user", "create", "--username", username, "--email", `${username}@example.com`, "--plan", "paid");
      if (created.status !== 0) throw new Error(`creating a user: ${created.stderr}`);
      return created.json.api_key as string;
    };
    const create = async (customResponse: boolean, key = server.bootstrapKey) => {
      const r = await server.client(key).post("/v1/sources", { component_code: component(customResponse), name: `peers-${made++}` });
      if (r.status !== 200) throw new Error(`creating a source: ${r.status} ${JSON.stringify(r.body)}`);
      const watcher = watch(`${server.url}/sources/${r.body.data.id as string}/sse`, key);
      watchers.push(watcher);
      await watcher.opened();
      return { endpoint: r.body.data.configured_props.http.endpoint_url as string, watcher };
    };
    type Made = Awaited<ReturnType<typeof create>>;
    /** n sources: one of the operator's, or each of a user of its own. */
    const several = async (customResponse: boolean, n: number) => {
      const list: Made[] = [];
      for (let i = 0; i < n; i++) list.push(await create(customResponse, n === 1 ? server.bootstrapKey : userKey()));
      return list;
    };
    const queued = await several(false, 1);
    const queuedMany = await several(false, MANY);
    const custom = await several(true, 1);
    const customMany = await several(true, MANY);
    const count = (sources: Made[]) => sources.reduce((n, s) => n + s.watcher.count, 0);
    const lastArrival = (sources: Made[]) => Math.max(...sources.map((s) => s.watcher.last));

    const drained = async (sources: Made[]): Promise<Drained> => {
      const before = count(sources);
      const started = performance.now();
      const result = await load(sources.map((s) => s.endpoint));
      const ended = performance.now();
      const done = await until(() => count(sources) - before >= result.ok, drainTimeoutMs);
      const completed = count(sources) - before;
      const last = lastArrival(sources);
      return {
        ...result,
        completed,
        runsPerSecond: completed / ((Math.max(last, ended) - started) / 1000),
        drainSeconds: done ? Math.max(0, last - ended) / 1000 : NaN,
      };
    };
    const answered = async (sources: Made[]): Promise<LoadOutcome> => {
      const before = count(sources);
      const result = await load(sources.map((s) => s.endpoint));
      // Every answered request's event was appended before the answer: they are all on SSE shortly.
      await until(() => count(sources) - before >= result.ok, 60_000);
      return result;
    };

    for (let round = 1; round <= rounds; round++) {
      const r: Round = {
        koa: await load([koa.url]),
        nodeRed: await load([nodeRed.url]),
        queued: await drained(queued),
        queuedMany: await drained(queuedMany),
        custom: await answered(custom),
        customMany: await answered(customMany),
        rawQueued: await rawQueued(),
      };
      rows.push(r);
      console.log(`round ${round}: ${JSON.stringify(r)}`);
    }
  } finally {
    for (const w of watchers) w.es.close();
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
    koa.child.kill("SIGTERM");
    nodeRed.child.kill("SIGTERM");
    rmSync(nodeRed.userDir, { recursive: true, force: true });
    if (mode === "scaled") {
      await stopSharedKafka();
      await dropTestSchemas();
    }
  }
  const report = render(machine, rows);
  console.log(`\n${report}`);
  const file = path.join(repoRoot, "bench", "results", mode === "scaled" ? "peers-scaled.md" : "peers.md");
  writeFileSync(file, report);
  console.log(`written to ${path.relative(repoRoot, file)}`);
}

const int = (n: number) => Math.round(n).toLocaleString("en");
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : "–");
const ratio = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : "–");

function render(machine: string, rows: Round[]): string {
  const per = (pick: (r: Round) => number, format: (n: number) => string) => rows.map((r) => format(pick(r))).join(" / ");
  const line = (name: string, pick: (r: Round) => LoadOutcome) =>
    `| ${name} | ${per((r) => pick(r).rps, int)} | ${per((r) => pick(r).p99, ms)} | ${per((r) => pick(r).rps / r.koa.rps, ratio)} | ${per((r) => pick(r).rps / r.nodeRed.rps, ratio)} | ${per((r) => pick(r).non2xx, int)} |`;
  const drainLine = (name: string, pick: (r: Round) => Drained) =>
    `| ${name} | ${per((r) => pick(r).ok, int)} | ${per((r) => pick(r).completed, int)} | ${per((r) => pick(r).runsPerSecond, int)} | ${per((r) => pick(r).runsPerSecond / pick(r).rps, ratio)} | ${per(
      (r) => pick(r).drainSeconds,
      (n) => (Number.isFinite(n) ? n.toFixed(1) : "not drained"),
    )} |`;
  const out = [
    `# Peers benchmark${mode === "scaled" ? " (scaled: PostgreSQL log + Kafka bus)" : ""}`,
    "",
    `Command: \`${mode === "scaled" ? "BENCH_MODE=scaled " : ""}npm run bench:peers\` (bench/peers.ts). Tables written by the bench; the reading at the end, if any, by hand.`,
    "",
    `Machine: ${machine}.`,
    "",
    `Load: autocannon in a process of its own, ${connections} keep-alive connections, ${seconds} s per load, ${Buffer.byteLength(body)}-byte JSON body, ${rounds} rounds; each round runs every target in turn (same machine state). req/s counts 2xx answers; "refused" counts other answers (429/503 back-pressure).`,
    "",
    "| target | req/s (rounds) | p99 ms | / Koa | / Node-RED | refused |",
    "|---|---|---|---|---|---|",
    line("Koa, parse and answer", (r) => r.koa),
    line(`Node-RED ${NODE_RED_VERSION} flow (http in → function → http response)`, (r) => r.nodeRed),
    line("Headwater, custom response (run, event durably appended, then answered), 1 source", (r) => r.custom),
    line(`Headwater, custom response, ${MANY} sources of ${MANY} users`, (r) => r.customMany),
    line("Headwater, answered when queued, 1 source", (r) => r.queued),
    line(`Headwater, answered when queued, ${MANY} sources of ${MANY} users`, (r) => r.queuedMany),
    line("Headwater, answered when queued, 1 source, API-only node (the request path alone; runs on runner nodes)", (r) => r.rawQueued),
    "",
    "End to end (the queued loads followed to their events on SSE): runs/s from the load's start to the last event; drain = time from the end of the load to the last event.",
    "",
    "| queued load | accepted | runs completed | runs/s | runs/s ÷ accepted req/s | drain s |",
    "|---|---|---|---|---|---|",
    drainLine("1 source", (r) => r.queued),
    drainLine(`${MANY} sources of ${MANY} users`, (r) => r.queuedMany),
    "",
  ];
  if (mode === "scaled") {
    out.push(
      "Against the scaled figures recorded before (bench/results/ingest.md, 1 source: 387 queued req/s, 69 custom-response req/s; goal ≥ 5×):",
      "",
      `- queued: ${per((r) => r.queued.rps / 387, ratio)} (API-only node: ${per((r) => r.rawQueued.rps / 387, ratio)}); custom response: ${per((r) => r.custom.rps / 69, ratio)}`,
      "",
    );
  }
  return out.join("\n");
}

await main();
