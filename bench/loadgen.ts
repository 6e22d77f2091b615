// One autocannon load in a process of its own, so the load generator never shares an event loop
// with the bench's own bookkeeping (SSE counters). Takes its options as one JSON argument, prints
// one JSON line: `node dist/bench/loadgen.js '{"url":…,"connections":32,"seconds":8,"body":"…"}'`.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface LoadOptions {
  /** One target, or several that share the connections. */
  readonly url: string | readonly string[];
  readonly connections: number;
  readonly seconds: number;
  readonly body: string;
}

export interface LoadOutcome {
  /** 2xx answers per second over the load. */
  readonly rps: number;
  /** Every answer (2xx, 429, 503, …) per second. */
  readonly answeredRps: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly p50: number;
  readonly p99: number;
  /** The load generator's own CPU over the load (user and kernel, ms): it shares the machine. */
  readonly cpuUserMs: number;
  readonly cpuSystemMs: number;
}

interface AutocannonResult {
  "2xx": number;
  non2xx: number;
  errors: number;
  timeouts: number;
  duration: number;
  requests: { total: number };
  latency: { p50: number; p99: number };
}
type Autocannon = (options: Record<string, unknown>, done: (error: Error | null, result: AutocannonResult) => void) => unknown;

/** The project's devDependency, or the copy `bench:peers` installs beside Node-RED in its cache. */
export function autocannonPath(repoRoot: string): string | undefined {
  for (const base of [repoRoot, path.join(repoRoot, ".cache", "node-red")]) {
    const candidate = path.join(base, "node_modules", "autocannon", "package.json");
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
  const found = autocannonPath(repoRoot);
  if (!found) throw new Error("autocannon is not installed (npm install, or run bench:peers once to fill .cache/node-red)");
  const autocannon = createRequire(found)("autocannon") as Autocannon;
  const cpuBefore = process.cpuUsage();
  const result = await new Promise<AutocannonResult>((resolve, reject) => {
    autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.seconds,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: options.body,
      },
      (error, r) => (error ? reject(error) : resolve(r)),
    );
  });
  const cpu = process.cpuUsage(cpuBefore);
  const seconds = result.duration || options.seconds;
  const outcome: LoadOutcome = {
    rps: result["2xx"] / seconds,
    answeredRps: (result["2xx"] + result.non2xx) / seconds,
    ok: result["2xx"],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
  };
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
