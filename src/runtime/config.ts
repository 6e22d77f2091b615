// Runtime limits and their defaults. The library reads no environment variable: the node's config
// (src/config.ts) builds its RuntimeOptions.
import os from "node:os";

export interface SandboxLimits {
  /** Wall-clock limit of one invocation (ms). */
  readonly timeoutMs: number;
  /** Heap limit of one isolate (MB). */
  readonly memoryMb: number;
  /** Largest JSON of one emitted event (bytes). */
  readonly maxEmitBytes: number;
  /** Most emits in one invocation. */
  readonly maxEmitsPerRun: number;
  /** Console output kept per invocation (bytes); the rest is dropped and counted. */
  readonly maxLogBytes: number;
  /** Console lines kept per invocation. */
  readonly maxLogLines: number;
  /** Longest single console line (characters); longer lines are cut. */
  readonly maxLogLineChars: number;
  /** this.db total size per source (bytes). */
  readonly maxDbBytes: number;
  /** Largest body given to http.respond (bytes). */
  readonly maxResponseBytes: number;
  /** Outbound HTTP from components. */
  readonly httpTimeoutMs: number;
  readonly httpMaxResponseBytes: number;
  /** Concurrent outbound requests per invocation. */
  readonly httpMaxConcurrent: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  timeoutMs: 300_000,
  memoryMb: 256,
  maxEmitBytes: 512 * 1024,
  maxEmitsPerRun: 1_000,
  maxLogBytes: 256 * 1024,
  maxLogLines: 2_000,
  maxLogLineChars: 16 * 1024,
  maxDbBytes: 60 * 1024,
  maxResponseBytes: 6 * 1024 * 1024,
  httpTimeoutMs: 30_000,
  httpMaxResponseBytes: 10 * 1024 * 1024,
  httpMaxConcurrent: 16,
};

export interface RuntimeOptions {
  /** Child processes in the pool; default: one per CPU, at least 1, at most 8. */
  readonly workers?: number;
  /** Default per-invocation wall-clock limit (ms), 300 000. */
  readonly timeoutMs?: number;
  /** Default per-invocation isolate memory limit (MB), 256. */
  readonly memoryMb?: number;
  /** Everything else of SandboxLimits. */
  readonly limits?: Partial<SandboxLimits>;
  /** Host directory for caches (npm packages). */
  readonly cacheDir: string;
  /** Lets component HTTP reach private, loopback and link-local addresses. */
  readonly allowPrivateNetworks?: boolean;
  /** Isolates kept per child process; each holds warm contexts of one owner. Default: defaultWarmIsolates(). */
  readonly maxWarmIsolates?: number;
  /** Warm sources (a context each) kept per child process (LRU beyond that). Default: defaultWarmContexts(). */
  readonly maxWarmContexts?: number;
  /** Invocations running at once per child; more wait in the host. Default 32. */
  readonly maxConcurrentPerWorker?: number;
  /** Heartbeat period and the silence after which a child is killed (ms). Defaults 1000 / 10 000. */
  readonly heartbeatIntervalMs?: number;
  readonly heartbeatTimeoutMs?: number;
  /** Extra time the host grants a child past the invocation timeout before killing it (ms). Default 5000. */
  readonly hardKillGraceMs?: number;
  /** Loading a component during prepare (ms). Default 10 000. */
  readonly loadTimeoutMs?: number;
  /** The runner child's entry module; tests substitute a wrapper around the real one. */
  readonly workerPath?: string;
}

/** What one warm source's context costs in its isolate's heap, about (`bench/results/runtime.md`). */
export const WARM_CONTEXT_BYTES = 256 * 1024;
/** What an isolate costs beside its contexts, about (`bench/results/many-sources-warm.md`). */
export const WARM_ISOLATE_BYTES = 1.5 * 1024 * 1024;

/** How many of `bytes` fit into an eighth of the machine's memory spread over `workers` children, within [min, max]. */
function eighthOfMemory(workers: number, bytes: number, min: number, max: number): number {
  return Math.max(min, Math.min(max, Math.floor(os.totalmem() / 8 / Math.max(1, workers) / bytes)));
}

/**
 * Warm sources each child keeps by default: an eighth of the machine's memory spread over the
 * children at ~256 KB a context, between 64 and 10,000 (~4,000 per child on a machine with 16 GB
 * and 2 children). Sized for a node's whole working set: a source that runs every few seconds
 * stays warm on a node of that many sources.
 */
export function defaultWarmContexts(workers: number): number {
  return eighthOfMemory(workers, WARM_CONTEXT_BYTES, 64, 10_000);
}

/**
 * Isolates each child keeps by default: another eighth of the memory at ~1.5 MB an isolate,
 * between 64 and 2,000 (~680 per child with 16 GB and 2 children). A user whose sources run at
 * once has an isolate for each of them running, so a node needs a few per busy user.
 */
export function defaultWarmIsolates(workers: number): number {
  return eighthOfMemory(workers, WARM_ISOLATE_BYTES, 64, 2_000);
}

export function defaultWorkerCount(): number {
  return Math.max(1, Math.min(8, os.availableParallelism()));
}

export function resolveLimits(opts: Pick<RuntimeOptions, "timeoutMs" | "memoryMb" | "limits">): SandboxLimits {
  return {
    ...DEFAULT_LIMITS,
    ...opts.limits,
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.memoryMb !== undefined ? { memoryMb: opts.memoryMb } : {}),
  };
}
