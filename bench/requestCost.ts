// What one request costs, and where: `npm run bench:cost`.
// The peers bench says how fast; this one says what each request costs the machine. For each
// target it runs one autocannon load (bench/loadgen.ts, a process of its own) after a warm-up,
// and reads the kernel's accounting around it: CPU of the server's event loop (its main thread),
// of its other threads (the SQLite writer threads, V8's GC helpers, libuv's pool), of its runner
// children (the sandboxes) and of the load generator, each split into user and kernel time
// (/proc/<pid>/task/<tid>/stat), and the server process's read and write system calls and bytes
// written to storage (/proc/<pid>/io), all per answered request.
// Targets: the plain Koa app (the peers' ceiling), Node-RED's flow (installed at bench time into
// .cache/node-red, as bench:peers does), Headwater answered when queued (an API-only
// node, and a full node that also runs), and custom response (1 source, 16 sources of 16 users),
// on the embedded default. BENCH_SECONDS (default 8), BENCH_ROUNDS (default 2),
// BENCH_CONNECTIONS (default 32); BENCH_RESULT names the results file (default request-cost.md);
// BENCH_THREADS=1 also prints every server thread's share; BENCH_ONLY=<text> runs the targets whose
// name holds it.
import type { ChildProcess } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer } from "../test/harness/server.js";
import { apiOnlyNodeEnv, benchServerEnv, emitBodyComponent, machineLine, runLoad, sleep, startPlainKoa } from "./common.js";
import type { LoadOutcome } from "./loadgen.js";
import { installPeers, NODE_RED_VERSION, startNodeRed } from "./nodeRed.js";
import { add, minus, none, sample, type Cpu } from "./procStat.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const resultFile = process.env.BENCH_RESULT ?? "request-cost.md";
/** ~30 bytes of JSON, as in bench:peers. */
const body = JSON.stringify({ order: "ord_1234", total: 4210 });
const benchDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(benchDir, "..", "..");

interface Measured {
  readonly load: LoadOutcome;
  readonly main: Cpu;
  readonly otherThreads: Cpu;
  readonly children: Cpu;
  readonly loadGenerator: Cpu;
  readonly syscr: number;
  readonly syscw: number;
  readonly writeBytes: number;
}

/** One load against `urls` with the server process `pid` accounted around it. */
async function measure(pid: number, urls: readonly string[]): Promise<Measured> {
  const url = urls.length === 1 ? urls[0] : urls;
  // Warm-up: JIT, isolates, connections and caches, so the measured load is the steady state.
  await runLoad({ url, connections, seconds: 2, body });
  await sleep(500);
  const before = sample(pid);
  const load = await runLoad({ url, connections, seconds, body });
  const after = sample(pid);
  if (process.env.BENCH_THREADS) {
    for (const [tid, cpu] of after.threads) {
      const used = minus(cpu, before.threads.get(tid) ?? none);
      if (used.userMs + used.systemMs > 0) console.log(`  thread ${tid}${tid === pid ? " (main)" : ""}: ${cell(used, load.ok)} µs/req`);
    }
  }
  return {
    load,
    main: minus(after.main, before.main),
    otherThreads: minus(after.otherThreads, before.otherThreads),
    children: minus(after.children, before.children),
    loadGenerator: { userMs: load.cpuUserMs, systemMs: load.cpuSystemMs },
    syscr: after.io.syscr - before.io.syscr,
    syscw: after.io.syscw - before.io.syscw,
    writeBytes: after.io.writeBytes - before.io.writeBytes,
  };
}

/** A peer process (Koa, Node-RED) measured at its URL, then stopped. */
async function peer(started: Promise<{ url: string; child: ChildProcess; userDir?: string }>): Promise<Measured> {
  const { url, child, userDir } = await started;
  try {
    return await measure(child.pid!, [url]);
  } finally {
    child.kill("SIGTERM");
    if (userDir) rmSync(userDir, { recursive: true, force: true });
  }
}

/** A fresh `headwater start` with `sources` sources (one user each when more than one). */
async function headwater(options: { customResponse: boolean; sources: number; apiOnly?: boolean }): Promise<Measured> {
  const server = new TestServer({ mode: "embedded", env: { ...benchServerEnv, ...(options.apiOnly ? apiOnlyNodeEnv : {}) } });
  await server.start(120_000);
  try {
    const urls: string[] = [];
    for (let i = 0; i < options.sources; i++) {
      let key = server.bootstrapKey;
      if (options.sources > 1) {
        const username = `cost${i}`;
        const created = server.cli(
          "admin",
          "user",
          "create",
          "--username",
          username,
          "--email",
          `${username}@example.com`,
          "--plan",
          "paid",
        );
        if (created.status !== 0) throw new Error(`creating a user: ${created.stderr}`);
        key = created.json.api_key as string;
      }
      const r = await server
        .client(key)
        .post("/v1/sources", { component_code: emitBodyComponent("cost", options.customResponse), name: `cost-${i}` });
      if (r.status !== 200) throw new Error(`creating a source: ${r.status} ${JSON.stringify(r.body)}`);
      urls.push(r.body.data.configured_props.http.endpoint_url as string);
    }
    return await measure(server.pid!, urls);
  } finally {
    await server.kill();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
}

const TARGETS: readonly { readonly name: string; readonly run: () => Promise<Measured> }[] = [
  { name: "Koa, parse and answer (the peers' ceiling)", run: () => peer(startPlainKoa()) },
  {
    name: `Node-RED ${NODE_RED_VERSION} flow (http in → function → http response)`,
    run: () => peer(startNodeRed()),
  },
  {
    name: "Headwater, answered when queued, API-only node, 1 source",
    run: () => headwater({ customResponse: false, sources: 1, apiOnly: true }),
  },
  { name: "Headwater, answered when queued, 1 source (the node also runs)", run: () => headwater({ customResponse: false, sources: 1 }) },
  { name: "Headwater, custom response, 1 source", run: () => headwater({ customResponse: true, sources: 1 }) },
  { name: "Headwater, custom response, 16 sources of 16 users", run: () => headwater({ customResponse: true, sources: 16 }) },
];

const us = (ms: number, requests: number) => Math.round((ms * 1000) / requests);
const cell = (cpu: Cpu, requests: number) => `${us(cpu.userMs + cpu.systemMs, requests)} (${us(cpu.systemMs, requests)})`;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

async function main(): Promise<void> {
  installPeers();
  const machine = machineLine();
  console.log(`machine: ${machine}`);
  const only = process.env.BENCH_ONLY;
  const targets = only ? TARGETS.filter((t) => t.name.includes(only)) : TARGETS;
  const results = new Map<string, Measured[]>(targets.map((t) => [t.name, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const target of targets) {
      const m = await target.run();
      results.get(target.name)!.push(m);
      const n = m.load.ok;
      console.log(
        `round ${round} ${target.name}: ${fmt(m.load.rps)} req/s; µs/req main ${cell(m.main, n)}, threads ${cell(m.otherThreads, n)}, children ${cell(m.children, n)}, load generator ${cell(m.loadGenerator, n)}`,
      );
    }
  }

  const rows = targets.map(({ name }) => {
    const ms = results.get(name)!;
    const per = (f: (m: Measured) => string) => ms.map(f).join(" / ");
    const server = (m: Measured) => add(add(m.main, m.otherThreads), m.children);
    return (
      `| ${name} | ${per((m) => fmt(m.load.rps))} | ${per((m) => cell(m.main, m.load.ok))} | ${per((m) => cell(m.otherThreads, m.load.ok))} | ` +
      `${per((m) => cell(m.children, m.load.ok))} | ${per((m) => cell(server(m), m.load.ok))} | ${per((m) => cell(m.loadGenerator, m.load.ok))} | ` +
      `${per((m) => `${(m.syscr / m.load.ok).toFixed(1)} r, ${(m.syscw / m.load.ok).toFixed(1)} w`)} | ${per((m) => (m.writeBytes / m.load.ok / 1024).toFixed(1))} |`
    );
  });
  const text = [
    "# Request cost",
    "",
    "Command: `npm run bench:cost` (bench/requestCost.ts). Tables written by the bench; the reading at the end, if any, by hand.",
    "",
    `Machine: ${machine}.`,
    "",
    `Load: autocannon in a process of its own, ${connections} keep-alive connections, ${seconds} s per load after a 2 s warm-up, ` +
      `${Buffer.byteLength(body)}-byte JSON body, ${rounds} rounds (one figure per round, in order); every Headwater target is a fresh ` +
      "`headwater start` on the embedded default.",
    "",
    "CPU in µs per answered request, user + kernel with the kernel's part in parentheses, from `/proc/<pid>/task/<tid>/stat` " +
      "around the load: the server's event loop (main thread), its other threads (SQLite writer threads, V8's GC helpers, " +
      "libuv's pool), its runner children (the sandboxes), their sum, and the load generator. System calls (read-class and " +
      "write-class, from `/proc/<pid>/io`: files, sockets, pipes, eventfds) and KB written to storage are the server " +
      "process's, children excluded.",
    "",
    "| target | req/s | main thread | other threads | runner children | server in all | load generator | syscalls per req (read, write) | KB written per req |",
    "|---|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
  ].join("\n");
  const file = path.join(repoRoot, "bench", "results", resultFile);
  writeFileSync(file, text);
  console.log(`\nwritten to ${path.relative(repoRoot, file)}\n\n${text}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
