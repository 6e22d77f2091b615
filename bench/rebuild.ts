// Projection rebuild: `npm run bench:rebuild`. Builds a SQLite log of BENCH_EMITTERS (default 10,000)
// emitters × BENCH_EVENTS_PER_EMITTER (default 100) EventEmitted plus one RunRecorded each (one
// append per emitter, like a run): 1,010,000 events by default, the size of the goal. Then times
// `rebuildReadModelsFile` over every projection (what `headwater projections rebuild` runs), until
// the new read-model file is durable and in place, BENCH_RUNS times (default 3), each run in a
// process of its own like the command. BENCH_LOG=<file> replays that log instead (built there when missing, and
// kept), so two builds can be compared on the same log back to back.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openEventStore } from "../src/store/open.js";
import { allProjections } from "../projections/index.js";
import { rebuildReadModelsFile } from "../src/projector/rebuildFile.js";

interface RunResult {
  readonly position: number;
  /** Until the new read-model file is durable and in place, as the operator command waits. */
  readonly ms: number;
  /** Of which making the file durable and putting it in place (rebuildReadModelsFile's finish). */
  readonly finishMs: number;
  /** CPU time of the process (every thread): on a shared machine, wall time minus this is time spent waiting for a core. */
  readonly cpuMs: number;
}

/** One rebuild, in this process: the child's side. */
async function rebuildOnce(logFile: string, readModelsFile: string): Promise<RunResult> {
  const store = await openEventStore(logFile);
  try {
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const { position, finishMs } = await rebuildReadModelsFile(store, readModelsFile, allProjections);
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    return { position, ms, finishMs, cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    await store.close();
  }
}

async function buildLog(file: string, emitters: number, perEmitter: number): Promise<void> {
  const writer = await openEventStore(file);
  const appendEmitter = async (e: number) => {
    const emitterId = `dc_bench${e}`;
    const invocationId = `inv_bench${e}`;
    const events = Array.from({ length: perEmitter }, (_, i) => ({
      type: "EventEmitted",
      data: {
        emitterId,
        id: `${1000 + i}-0`,
        channel: "",
        event: { n: i, text: "hello world" },
        summary: null,
        emitId: `${1000 + i}-0`,
        ts: null,
        indexedAtMs: 1000 + i,
        invocationId,
      },
    }));
    const recorded = {
      type: "RunRecorded",
      data: {
        emitterId,
        invocationId,
        at: 2000,
        dedupe: {},
        db: {},
        lastEventId: `${1000 + perEmitter - 1}-0`,
        recentInvocations: [invocationId],
      },
    };
    await writer.append(`emitter-${emitterId}`, [...events, recorded]);
  };
  // 100 appends at a time share a group commit: building the log takes seconds, not a minute.
  const started = performance.now();
  for (let e = 0; e < emitters; e += 100) {
    await Promise.all(Array.from({ length: Math.min(100, emitters - e) }, (_, k) => appendEmitter(e + k)));
  }
  await writer.close();
  console.log(`log of ${emitters * (perEmitter + 1)} events built in ${Math.round(performance.now() - started)} ms (${file})`);
}

if (process.argv[2] === "--run") {
  process.stdout.write(`${JSON.stringify(await rebuildOnce(process.argv[3], process.argv[4]))}\n`);
} else {
  const emitters = Number(process.env.BENCH_EMITTERS ?? 10_000);
  const perEmitter = Number(process.env.BENCH_EVENTS_PER_EMITTER ?? 100);
  const runs = Number(process.env.BENCH_RUNS ?? 3);
  const dir = mkdtempSync(path.join(tmpdir(), "headwater-rebuild-"));
  try {
    const logFile = process.env.BENCH_LOG ?? path.join(dir, "log.db");
    if (!existsSync(logFile)) await buildLog(logFile, emitters, perEmitter);
    const rates: number[] = [];
    for (let run = 0; run < runs; run++) {
      const output = execFileSync(
        process.execPath,
        ["--no-node-snapshot", fileURLToPath(import.meta.url), "--run", logFile, path.join(dir, `readmodels-${run}.db`)],
        { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
      );
      const { position, ms, finishMs, cpuMs } = JSON.parse(output) as RunResult;
      rates.push(position / (ms / 1000));
      console.log(
        `run ${run + 1}: ${position} events in ${ms.toFixed(0)} ms (finishing the file ${finishMs.toFixed(0)} ms of it): ${Math.round(position / (ms / 1000))} events/s (cpu ${Math.round(cpuMs)} ms, load ${loadavg()[0].toFixed(2)})`,
      );
    }
    const median = [...rates].sort((a, b) => a - b)[Math.floor(rates.length / 2)];
    console.log(
      `\nmedian ${Math.round(median)} events/s over ${runs} runs; ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, load ${loadavg()[0].toFixed(2)}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
