import path from "node:path";

/** Every setting comes from the environment; the README lists each variable. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** Base address clients reach this node on, without the /v1 prefix. */
  readonly publicUrl: string | undefined;
  readonly bootstrapKey: string | undefined;
  readonly bootstrapUsername: string;
  readonly bootstrapEmail: string;
  readonly eventStore: string;
  readonly maxBodyBytes: number;
  readonly freeDailyInvocations: number;
  readonly freeDailyComputeMs: number;
  /** `embedded` or `kafka://host:port[,host:port…]`. */
  readonly bus: string;
  /** Names this node's reply topic; stable across restarts (kept in the data directory when not set). */
  readonly nodeId: string | undefined;
  readonly roles: readonly Role[];
  readonly secretKey: string | undefined;
  readonly timerMinSeconds: number;
  readonly runnerConcurrency: number;
  readonly endpointMaxBodyBytes: number;
  readonly endpointRatePerSecond: number;
  readonly endpointBurst: number;
  readonly sseHeartbeatMs: number;
  /** Back-pressure: queued invocations admitted per source, per billed user and per node. */
  readonly sourceBacklog: number;
  readonly ownerBacklog: number;
  readonly ownerBacklogBytes: number;
  readonly nodeBacklog: number;
  readonly nodeBacklogBytes: number;
  /** REST API: per API key, and per address for requests without a valid key. */
  readonly apiRatePerSecond: number;
  readonly apiBurst: number;
  readonly anonymousRatePerSecond: number;
  readonly anonymousBurst: number;
  /** Client addresses from X-Forwarded-For (behind a trusted reverse proxy). */
  readonly trustProxy: boolean;
  /** How long an endpoint (custom response) or a manual run waits for the run's answer; default: run timeout + 15 s. */
  readonly responseTimeoutMs: number | undefined;
  /** How long SIGTERM lets requests and runs in flight finish before the node exits. */
  readonly shutdownGraceMs: number;
  readonly env: NodeJS.ProcessEnv;
}

export const ROLES = ["api", "runner", "dispatcher", "scheduler", "projector"] as const;
export type Role = (typeof ROLES)[number];

export function parseRoles(text: string): Role[] {
  const roles = text.split(",").map((r) => r.trim()).filter((r) => r !== "");
  const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length > 0 || roles.length === 0) throw new Error(`roles must be a comma-separated subset of ${ROLES.join(",")}`);
  return roles as Role[];
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = path.resolve(env.HEADWATER_DATA_DIR || "data");
  return {
    port: integer(env, "PORT", 8080),
    host: env.HEADWATER_HOST || "127.0.0.1",
    dataDir,
    publicUrl: env.HEADWATER_PUBLIC_URL ? env.HEADWATER_PUBLIC_URL.replace(/\/+$/, "") : undefined,
    bootstrapKey: env.HEADWATER_BOOTSTRAP_KEY || undefined,
    bootstrapUsername: env.HEADWATER_BOOTSTRAP_USERNAME || "operator",
    bootstrapEmail: env.HEADWATER_BOOTSTRAP_EMAIL || "operator@localhost",
    eventStore: env.HEADWATER_EVENT_STORE || `sqlite:${path.join(dataDir, "events.db")}`,
    maxBodyBytes: integer(env, "HEADWATER_MAX_BODY_BYTES", 1024 * 1024, 1024),
    freeDailyInvocations: integer(env, "HEADWATER_FREE_DAILY_INVOCATIONS", 10_000),
    freeDailyComputeMs: integer(env, "HEADWATER_FREE_DAILY_COMPUTE_MS", 30 * 60 * 1000),
    bus: env.HEADWATER_BUS || "embedded",
    nodeId: env.HEADWATER_NODE_ID || undefined,
    roles: parseRoles(env.HEADWATER_ROLES || ROLES.join(",")),
    secretKey: env.HEADWATER_SECRET_KEY || undefined,
    timerMinSeconds: integer(env, "HEADWATER_TIMER_MIN_INTERVAL_SECONDS", 60, 1),
    runnerConcurrency: integer(env, "HEADWATER_RUNNER_CONCURRENCY", 16, 1),
    endpointMaxBodyBytes: integer(env, "HEADWATER_ENDPOINT_MAX_BODY_BYTES", 512 * 1024, 1024),
    endpointRatePerSecond: integer(env, "HEADWATER_ENDPOINT_RATE_PER_SECOND", 50, 1),
    endpointBurst: integer(env, "HEADWATER_ENDPOINT_BURST", 200, 1),
    sseHeartbeatMs: integer(env, "HEADWATER_SSE_HEARTBEAT_MS", 15_000, 100),
    sourceBacklog: integer(env, "HEADWATER_SOURCE_BACKLOG", 1_000, 1),
    ownerBacklog: integer(env, "HEADWATER_OWNER_BACKLOG", 10_000, 1),
    ownerBacklogBytes: integer(env, "HEADWATER_OWNER_BACKLOG_BYTES", 32 * 1024 * 1024, 1024),
    nodeBacklog: integer(env, "HEADWATER_NODE_BACKLOG", 100_000, 1),
    nodeBacklogBytes: integer(env, "HEADWATER_NODE_BACKLOG_BYTES", 256 * 1024 * 1024, 1024),
    apiRatePerSecond: integer(env, "HEADWATER_API_RATE_PER_SECOND", 100, 1),
    apiBurst: integer(env, "HEADWATER_API_BURST", 1000, 1),
    anonymousRatePerSecond: integer(env, "HEADWATER_ANONYMOUS_RATE_PER_SECOND", 10, 1),
    anonymousBurst: integer(env, "HEADWATER_ANONYMOUS_BURST", 100, 1),
    trustProxy: env.HEADWATER_TRUST_PROXY === "1" || env.HEADWATER_TRUST_PROXY === "true",
    responseTimeoutMs: env.HEADWATER_RESPONSE_TIMEOUT_MS ? integer(env, "HEADWATER_RESPONSE_TIMEOUT_MS", 0, 100) : undefined,
    shutdownGraceMs: integer(env, "HEADWATER_SHUTDOWN_GRACE_MS", 30_000),
    env,
  };
}
