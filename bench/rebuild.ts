// Projection rebuild: `npm run bench:rebuild`. Builds a SQLite log of BENCH_EMITTERS (default 3,000)
// emitters × BENCH_EVENTS_PER_EMITTER (default 100) EventEmitted plus one RunRecorded each (one
// append per emitter, like a run), then times `rebuildProjections` over every projection into a
// fresh read-model file (what `headwater projections rebuild` does), BENCH_RUNS times (default 3).
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { openEventStore } from "../src/store/open.js";
import { openReadModels } from "../src/readModels/database.js";
import { allProjections } from "../projections/index.js";
import { rebuildProjections } from "../src/projector/projector.js";

const emitters = Number(process.env.BENCH_EMITTERS ?? 3000);
const perEmitter = Number(process.env.BENCH_EVENTS_PER_EMITTER ?? 100);
const runs = Number(process.env.BENCH_RUNS ?? 3);

const dir = mkdtempSync(path.join(tmpdir(), "headwater-rebuild-"));
try {
  const store = await openEventStore(path.join(dir, "log.db"));
  for (let e = 0; e < emitters; e++) {
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
    await store.append(`emitter-${emitterId}`, [...events, recorded]);
  }
  const rates: number[] = [];
  for (let run = 0; run < runs; run++) {
    const file = path.join(dir, `readmodels-${run}.db`);
    const db = openReadModels(file);
    const started = performance.now();
    const position = await rebuildProjections(store, db, allProjections);
    const ms = performance.now() - started;
    db.close();
    rates.push(position / (ms / 1000));
    console.log(`run ${run + 1}: ${position} events in ${ms.toFixed(0)} ms: ${Math.round(position / (ms / 1000))} events/s`);
  }
  await store.close();
  const median = [...rates].sort((a, b) => a - b)[Math.floor(rates.length / 2)];
  console.log(
    `\nmedian ${Math.round(median)} events/s over ${emitters * (perEmitter + 1)} events; ${cpus().length} cpus (${cpus()[0]?.model}), node ${process.version}, load ${loadavg()[0].toFixed(2)}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
