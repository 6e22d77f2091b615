// npm run bench:isolate-entry — what entering an isolate costs the runner child, per call: an
// async `apply` (the call runs on isolated-vm's pool thread and its answer comes back) against
// `applySync` with a promise result (the call runs on this thread; IsolateSlot.invoke), for a
// trivial run that parses its payload and emits through a fire-and-forget callback. Also the same
// runs entered once per batch of 16, for comparison. Prints the table; BENCH_N calls per form
// (default 5,000), BENCH_ROUNDS rounds (default 3), medians.
import ivm from "isolated-vm";
import { machineLine } from "./common.js";

const N = Number(process.env.BENCH_N ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 16;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  const context = await isolate.createContext();
  let emitted = 0;
  await context.global.set("emit", new ivm.Callback(() => void emitted++, { ignored: true }));
  await context.eval(`
    globalThis.run = async (payload) => { const e = JSON.parse(payload); emit(JSON.stringify(e.body)); return '{"ok":true}'; };
    globalThis.runMany = async (payloads) => { const out = []; for (const p of payloads) out.push(await run(p)); return out; };`);
  const run = (await context.global.get("run", { reference: true })) as ivm.Reference<(p: string) => Promise<string>>;
  const runMany = (await context.global.get("runMany", { reference: true })) as ivm.Reference<(p: string[]) => Promise<string[]>>;
  const payload = JSON.stringify({
    method: "POST",
    path: "/",
    headers: { "content-type": "application/json" },
    body: { order: "ord_1234", total: 4210 },
  });
  const options = { arguments: { copy: true }, result: { promise: true, copy: true } } as const;
  const forms: Record<string, () => Promise<unknown>> = {
    "async apply (pool thread), per run": () => run.apply(undefined, [payload], options),
    "applySync (this thread), per run": () => run.applySync(undefined, [payload], options),
    [`async apply once per batch of ${BATCH}`]: () => runMany.apply(undefined, [Array<string>(BATCH).fill(payload)], options),
  };
  const results = new Map<string, { wall: number[]; cpu: number[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, call] of Object.entries(forms)) {
      const batched = name.includes("batch");
      const calls = batched ? Math.ceil(N / BATCH) : N;
      const runs = batched ? calls * BATCH : N;
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) await call();
      const wall = Number(process.hrtime.bigint() - t0) / 1e3 / runs;
      const cpu = process.cpuUsage(cpu0);
      const entry = results.get(name) ?? { wall: [], cpu: [] };
      entry.wall.push(wall);
      entry.cpu.push((cpu.user + cpu.system) / runs);
      results.set(name, entry);
    }
  }
  if (emitted === 0) throw new Error("the runs emitted nothing");
  console.log(`Machine: ${machineLine()}; ${N} runs per form, ${ROUNDS} rounds, medians.\n`);
  console.log("| entry | wall µs per run | CPU µs per run (all threads) |");
  console.log("|---|---|---|");
  for (const [name, r] of results) console.log(`| ${name} | ${median(r.wall).toFixed(1)} | ${median(r.cpu).toFixed(1)} |`);
  isolate.dispose();
}

await main();
