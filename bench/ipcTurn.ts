// npm run bench:ipc-turn — what the runner IPC costs per run when several invocations cross in one
// event-loop turn (many sources with a run each), written one message per write (before
// 2026-11-28) or a turn's messages in one write (sandbox/turnBatch.ts), on both sides. Each round
// sends BENCH_PER_TURN invocations (default 16) in one turn to a child that answers each with a
// response and a result, and waits for all the answers. Prints host and child CPU per run and wall
// time per round, medians of BENCH_ROUNDS (default 5) alternated rounds of BENCH_N turns each
// (default 2,000).
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { messagesOf, TurnBatchedSender } from "../src/runtime/sandbox/turnBatch.js";
import { machineLine } from "./common.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.BENCH_N ?? 2000);
const PER_TURN = Number(process.env.BENCH_PER_TURN ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** ~500 bytes: an invocation's payload as the host sends it (JSON text inside the message). */
const payload = JSON.stringify({
  method: "run",
  event: { method: "POST", path: "/", headers: { "content-type": "application/json", "user-agent": "bench" }, body: { order: "ord_1234" } },
  http: { endpoint: "http://127.0.0.1:3000/e/abcdefghijklmnop", customResponse: true },
  limits: { maxEmitBytes: 524288, maxEmitsPerRun: 1000, maxLogBytes: 1048576, maxLogLines: 1000, maxDbBytes: 61440 },
});

const childCpu = (child: ChildProcess): Promise<number> =>
  new Promise((resolve) => {
    const onMessage = (raw: unknown): void => {
      for (const message of messagesOf(raw) as { type: string; cpuUs?: number }[]) {
        if (message.type !== "stats") continue;
        child.off("message", onMessage);
        resolve(message.cpuUs ?? 0);
      }
    };
    child.on("message", onMessage);
    child.send({ type: "stats" });
  });

async function measure(perTurn: boolean): Promise<{ hostUs: number; childUs: number; wallUs: number }> {
  const child = fork(path.join(here, "ipcTurnEcho.js"), perTurn ? ["turn"] : [], { serialization: "json", env: {}, execArgv: [] });
  const waiting = new Map<number, () => void>();
  child.on("message", (raw: unknown) => {
    for (const message of messagesOf(raw) as { type: string; id: number }[]) if (message.type === "result") waiting.get(message.id)?.();
  });
  const sender = new TurnBatchedSender<object>((message) => child.send(message));
  const send = (message: object): void => {
    if (perTurn) sender.send(message);
    else child.send(message);
  };
  let id = 0;
  const turn = () =>
    Promise.all(
      Array.from({ length: PER_TURN }, () => {
        const mine = id++;
        return new Promise<void>((resolve) => {
          waiting.set(mine, () => (waiting.delete(mine), resolve()));
          send({ type: "invoke", id: mine, payload });
        });
      }),
    );
  for (let i = 0; i < 200; i++) await turn(); // warm-up
  const childBefore = await childCpu(child);
  const before = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < N; i++) await turn();
  const wallUs = ((performance.now() - started) * 1000) / N;
  const host = process.cpuUsage(before);
  const childAfter = await childCpu(child);
  child.disconnect();
  const runs = N * PER_TURN;
  return { hostUs: (host.user + host.system) / runs, childUs: (childAfter - childBefore) / runs, wallUs };
}

async function main(): Promise<void> {
  const results = new Map<string, { hostUs: number[]; childUs: number[]; wallUs: number[] }>();
  const forms = [
    ["one write per message", false],
    ["a turn's messages in one write", true],
  ] as const;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, perTurn] of forms) {
      const m = await measure(perTurn);
      const entry = results.get(name) ?? { hostUs: [], childUs: [], wallUs: [] };
      entry.hostUs.push(m.hostUs);
      entry.childUs.push(m.childUs);
      entry.wallUs.push(m.wallUs);
      results.set(name, entry);
    }
  }
  console.log(`Machine: ${machineLine()}; ${PER_TURN} invocations per turn, ${N} turns per form, ${ROUNDS} rounds alternated, medians.\n`);
  console.log(`| IPC writes | host CPU µs per run | child CPU µs per run | wall µs per turn of ${PER_TURN} |`);
  console.log("|---|---|---|---|");
  for (const [name, r] of results) {
    console.log(`| ${name} | ${median(r.hostUs).toFixed(1)} | ${median(r.childUs).toFixed(1)} | ${median(r.wallUs).toFixed(0)} |`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
