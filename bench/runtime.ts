// npm run bench:runtime — warm invocation overhead, fresh-isolate and new-version cold starts,
// against a plain function call through the same child-process IPC. Writes bench/results/runtime.md.
import { fork } from "node:child_process";
import { promises as fs, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { prepareComponent, Runtime, type Invocation } from "../src/runtime/index.js";
import { preludeSource } from "../src/runtime/sandbox/preludeBundle.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(here, "../..");

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function p95(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length * 0.95)];
}

const us = (ns: bigint) => Number(ns) / 1000;

async function ipcBaseline(n: number): Promise<number[]> {
  const child = fork(path.join(here, "ipcEcho.js"), [], { serialization: "json", env: {}, execArgv: [] });
  const pending = new Map<number, () => void>();
  child.on("message", (m: { id: number }) => pending.get(m.id)?.());
  const payload = JSON.stringify({ method: "run", props: {}, event: {}, db: {} });
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await new Promise<void>((resolve) => {
      pending.set(i, resolve);
      child.send({ type: "invoke", id: i, payload });
    });
    pending.delete(i);
    samples.push(us(process.hrtime.bigint() - t));
  }
  child.disconnect();
  return samples;
}

async function main(): Promise<void> {
  const cacheDir = await fs.mkdtemp(path.join(os.tmpdir(), "headwater-bench-"));
  const workers = os.availableParallelism();
  const runtime = new Runtime({ cacheDir, workers });
  await runtime.ready();
  const trivialCode = `export default { name: "trivial", version: "1", async run() {} };`;
  const trivial = await prepareComponent({ code: trivialCode }, { runtime });
  const base = (sourceId: string, over: Partial<Invocation> = {}): Invocation => ({
    invocationId: "bench",
    ownerId: "u_bench",
    sourceId,
    codeHash: trivial.codeHash,
    bundleHash: trivial.bundleHash,
    bundle: trivial.bundle,
    method: "run",
    props: {},
    event: {},
    db: {},
    ...over,
  });

  // Warm-up, then sequential warm invocations of one source.
  for (let i = 0; i < 300; i++) await runtime.invoke(base("dc_warm"));
  const N = 3000;
  const warm: number[] = [];
  const warmInChild: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    const o = await runtime.invoke(base("dc_warm"));
    warm.push(us(process.hrtime.bigint() - t));
    warmInChild.push(o.wallMs * 1000);
    if (!o.ok || !o.warm) throw new Error("warm invocation failed");
  }

  // Warm invocations that use the bridges: emits (fire-and-forget) and db.set (synchronous).
  const busyCode = `export default { name: "busy", version: "1", props: { db: "$.service.db" }, async run(e) {
    for (let i = 0; i < 10; i++) this.$emit({ i, n: e.n, text: "event " + i }, { id: e.n * 100 + i, summary: "event " + i });
    this.db.set("last", e.n); this.db.set("seen", (this.db.get("seen") ?? 0) + 1); this.db.set("state", { cursor: "c" + e.n, items: [1, 2, 3] });
  } };`;
  const busy = await prepareComponent({ code: busyCode }, { runtime });
  const busyInv = (n: number): Invocation => ({
    ...base("dc_busy"),
    codeHash: busy.codeHash,
    bundleHash: busy.bundleHash,
    bundle: busy.bundle,
    event: { n },
  });
  for (let i = 0; i < 200; i++) await runtime.invoke(busyInv(i));
  const busyTimes: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const t = process.hrtime.bigint();
    const o = await runtime.invoke(busyInv(i));
    busyTimes.push(us(process.hrtime.bigint() - t));
    if (!o.ok || o.emits.length !== 10 || !o.dbChanged) throw new Error("busy invocation failed");
  }

  // Throughput: many sources at once, spread over the children.
  const SOURCES = 16 * workers;
  const PER_SOURCE = 150;
  for (let s = 0; s < SOURCES; s++) await runtime.invoke(base(`dc_tp${s}`));
  const tpStart = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  await Promise.all(
    Array.from({ length: SOURCES }, async (_, s) => {
      for (let i = 0; i < PER_SOURCE; i++) await runtime.invoke(base(`dc_tp${s}`));
    }),
  );
  const tpSeconds = Number(process.hrtime.bigint() - tpStart) / 1e9;
  const hostCpu = process.cpuUsage(cpuStart);
  const throughput = (SOURCES * PER_SOURCE) / tpSeconds;

  // Fresh isolate for a known bundle (a new source of a new owner: new isolate, compiled-code cache hit).
  const fresh: number[] = [];
  for (let i = 0; i < 60; i++) {
    const t = process.hrtime.bigint();
    const o = await runtime.invoke(base(`dc_fresh${i}`, { ownerId: `u_fresh${i}` }));
    fresh.push(us(process.hrtime.bigint() - t));
    if (o.warm) throw new Error("expected a fresh isolate");
  }

  // A new source of an owner whose isolate is there: a context of its own in that isolate
  // (context + prelude + bundle, no new isolate).
  const shared = new Runtime({ cacheDir, workers: 1 });
  await shared.ready();
  const joined: number[] = [];
  for (let i = 0; i < 61; i++) {
    const t = process.hrtime.bigint();
    const o = await shared.invoke(base(`dc_joined${i}`));
    if (i > 0) joined.push(us(process.hrtime.bigint() - t)); // the first creates the isolate
    if (!o.ok || o.warm) throw new Error("expected a cold start");
  }
  await shared.close();

  // A component importing the heavy Node modules (bundled into it on demand, not into the prelude):
  // what such a component pays for a fresh isolate, and for its save.
  const heavyCode = `import zlib from "zlib"; import http from "http"; import fs from "fs"; import { Readable } from "stream";
export default { name: "heavy", version: "1", async run() { this.$emit({ n: typeof zlib.gzipSync + typeof http.get + typeof fs.readFileSync + typeof Readable }); } };`;
  const heavyPrepare = process.hrtime.bigint();
  const heavy = await prepareComponent({ code: heavyCode }, { runtime });
  const heavyPrepareUs = us(process.hrtime.bigint() - heavyPrepare);
  const heavyFresh: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = process.hrtime.bigint();
    const o = await runtime.invoke({
      ...base(`dc_heavy${i}`, { ownerId: `u_heavy${i}` }),
      codeHash: heavy.codeHash,
      bundleHash: heavy.bundleHash,
      bundle: heavy.bundle,
    });
    heavyFresh.push(us(process.hrtime.bigint() - t));
    if (!o.ok || o.warm) throw new Error(`expected a fresh isolate running the heavy component: ${JSON.stringify(o.error)}`);
  }

  // A new component version: new bundle, no compiled-code cache. Invocation alone and prepare+invoke.
  const newVersion: number[] = [];
  const prepareTimes: number[] = [];
  for (let i = 0; i < 30; i++) {
    const code = `// version ${i}\nexport default { name: "v", version: "${i}", props: { db: "$.service.db" }, async run() { this.$emit({ v: ${i} }); } };`;
    const tp = process.hrtime.bigint();
    const prepared = await prepareComponent({ code }, { runtime });
    prepareTimes.push(us(process.hrtime.bigint() - tp));
    const t = process.hrtime.bigint();
    const o = await runtime.invoke({
      ...base(`dc_version`),
      codeHash: prepared.codeHash,
      bundleHash: prepared.bundleHash,
      bundle: prepared.bundle,
    });
    newVersion.push(us(process.hrtime.bigint() - t));
    if (!o.ok || o.warm) throw new Error("expected a cold new version");
  }
  await runtime.close();
  const prelude = await preludeSource();

  const ipc = await ipcBaseline(N);
  const warmMed = median(warm);
  const ipcMed = median(ipc);
  const freshMed = median(fresh);
  const newMed = median(newVersion);
  const cpu = readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  const fmt = (n: number) => n.toFixed(0);
  const md = `# Runtime benchmark

Command: \`npm run bench:runtime\` (bench/runtime.ts). Produced ${new Date().toISOString()}.

Machine: ${os.availableParallelism()} CPUs (\`nproc\`), ${cpu}, Node ${process.version}, ${os.platform()} ${os.release()}.
Runtime: ${workers} runner processes (one per CPU), default limits.

| measurement | median | p95 | notes |
|---|---|---|---|
| baseline: plain function call through child-process IPC | ${fmt(ipcMed)} µs | ${fmt(p95(ipc))} µs | fork + JSON serialization (as the runtime), same message shape, ${N} sequential calls |
| warm invocation, trivial \`run\` | ${fmt(warmMed)} µs | ${fmt(p95(warm))} µs | same source, warm isolate, ${N} sequential calls |
| … of which inside the runner child | ${fmt(median(warmInChild))} µs | ${fmt(p95(warmInChild))} µs | \`outcome.wallMs\`: one async call into the isolate and back (isolated-vm thread hop) |
| warm invocation, 10 \`$emit\` + 3 \`db.set\` | ${fmt(median(busyTimes))} µs | ${fmt(p95(busyTimes))} µs | same source, warm isolate, 1000 sequential calls |
| fresh isolate, known bundle (new source) | ${fmt(freshMed)} µs | ${fmt(p95(fresh))} µs | new isolate + context + prelude, compiled-code cache hit |
| new source of an owner with an isolate | ${fmt(median(joined))} µs | ${fmt(p95(joined))} µs | a context of its own + prelude + bundle in the isolate of the owner's other sources (same version) |
| cold start of a new component version (invoke only) | ${fmt(newMed)} µs | ${fmt(p95(newVersion))} µs | new bundle, compiled without cache |
| prepareComponent of a new version | ${fmt(median(prepareTimes))} µs | ${fmt(p95(prepareTimes))} µs | esbuild bundle + load and describe in a throwaway isolate + validation |
| fresh isolate, known bundle importing \`zlib\`, \`http\`, \`fs\`, \`stream\` | ${fmt(median(heavyFresh))} µs | ${fmt(p95(heavyFresh))} µs | the Node polyfills are bundled into this component only (bundle ${fmt(heavy.bundle.length / 1024)} KB; its first save took ${fmt(heavyPrepareUs / 1000)} ms) |

Ratios (same run):

- warm invocation / IPC baseline: **${(warmMed / ipcMed).toFixed(1)}×** (the sandbox adds ${fmt(warmMed - ipcMed)} µs per call over the bare IPC round trip)
- fresh isolate / warm invocation: **${(freshMed / warmMed).toFixed(1)}×**
- new source in its owner's isolate / warm invocation: **${(median(joined) / warmMed).toFixed(1)}×**
- new version cold start / warm invocation: **${(newMed / warmMed).toFixed(1)}×**

The rest of a warm call is the IPC round trip, slower than the idle baseline because the child also
wakes an isolate thread per call. Emits cross to the runner child fire-and-forget; each \`db.set\` is
one synchronous call to the child (it keeps the authoritative db and checks every write), a thread
hop of about 20 µs plus waiting for the emits queued ahead of it. A fresh isolate costs isolate +
context creation and running the prelude (${fmt(prelude.length / 1024)} KB: the bridge, console, timers, emit, db and
invoke; Buffer, events, util, URL, fetch, axios, crypto and process are globals and modules made on
their first use) before the component's own code. The heavier Node modules
(stream, http/https, fs, zlib, path, os, string_decoder, assert) are not in the prelude: a
component that imports them carries them in its own bundle.

Throughput: ${SOURCES} sources invoked concurrently (${PER_SOURCE} runs each): **${fmt(throughput)} calls/s** in total,
**${fmt(throughput / os.availableParallelism())} calls/s per core** (host process CPU during the run: ${((hostCpu.user + hostCpu.system) / 1e6 / tpSeconds).toFixed(2)} cores).
Sequential warm calls: ${fmt(1e6 / warmMed)} calls/s on one source.
`;
  await fs.mkdir(path.join(ROOT, "bench/results"), { recursive: true });
  await fs.writeFile(path.join(ROOT, "bench/results/runtime.md"), md);
  process.stdout.write(md);
  await fs.rm(cacheDir, { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`${String(err?.stack ?? err)}\n`);
  process.exit(1);
});
