// Every setting of a node, read from the environment once at start and validated together: one
// error names every bad variable. The README lists each variable; nothing else reads process.env.
import path from "node:path";
import { cleanEnv, makeValidator, str, type ReporterOptions } from "envalid";
import { DomainError } from "../commands/decider.js";
import type { RuntimeOptions } from "./runtime/config.js";
import type { DestinationOptions } from "./destinations/destinations.js";

export const ROLES = ["api", "runner", "dispatcher", "scheduler", "projector"] as const;
export type Role = (typeof ROLES)[number];

export function parseRoles(text: string): Role[] {
  const roles = text
    .split(",")
    .map((r) => r.trim())
    .filter((r) => r !== "");
  const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length > 0 || roles.length === 0) {
    throw new DomainError(
      "usage",
      `roles must be a comma-separated subset of ${ROLES.join(",")}${unknown.length ? `; unknown: ${unknown.join(", ")}` : ""}`,
    );
  }
  return roles as Role[];
}

/** A decimal integer at least `min` (envalid's num() would take 1e3, 0x10 or 1.5). */
const int = (min: number) =>
  makeValidator<number>((raw) => {
    if (!/^-?\d{1,15}$/.test(raw.trim())) throw new Error(`must be an integer, got "${raw}"`);
    const value = Number(raw);
    if (value < min) throw new Error(`must be an integer >= ${min}, got "${raw}"`);
    return value;
  });
/** An integer between min and max. */
const intBetween = (min: number, max: number) =>
  makeValidator<number>((raw) => {
    if (!/^-?\d{1,15}$/.test(raw.trim())) throw new Error(`must be an integer, got "${raw}"`);
    const value = Number(raw);
    if (value < min || value > max) throw new Error(`must be an integer from ${min} to ${max}, got "${raw}"`);
    return value;
  });
const baseUrl = makeValidator<string>((raw) => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error(`must be an http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
});
const roles = makeValidator<Role[]>((raw) => {
  try {
    return parseRoles(raw);
  } catch (error) {
    throw new Error((error as Error).message, { cause: error });
  }
});
const nodeId = makeValidator<string>((raw) => {
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(raw)) throw new Error(`must be letters, digits, ".", "_" or "-", got "${raw}"`);
  return raw;
});
const flag = makeValidator<boolean>((raw) => {
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off|)$/i.test(raw)) return false;
  throw new Error(`must be 1 or 0 (true or false), got "${raw}"`);
});
/** A TCP port, or 0 for any free one (the chosen URL is printed). */
const portOrZero = makeValidator<number>((raw) => {
  if (!/^\d{1,5}$/.test(raw.trim()) || Number(raw) > 65535) throw new Error(`must be a port number (0 picks a free one), got "${raw}"`);
  return Number(raw);
});
/** The operator's mail server: smtp://[user:pass@]host[:port] (STARTTLS when offered) or smtps://… (TLS). */
const smtpUrl = makeValidator<string>((raw) => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error("must be an smtp:// or smtps:// URL (smtp://user:pass@host:587)");
  }
  if ((parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") || parsed.hostname === "")
    throw new Error("must be an smtp:// or smtps:// URL with a host (smtp://user:pass@host:587)");
  return raw;
});
/** An address for From: `name@example.com` or `Name <name@example.com>`. */
const emailAddress = makeValidator<string>((raw) => {
  if (!/^(?:[^<>\r\n]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/.test(raw.trim()))
    throw new Error(`must be an email address (name@example.com or "Name <name@example.com>"), got "${raw}"`);
  return raw.trim();
});
const logLevel = str({ choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"], default: "info" });

function specs(dataDirDefault: string) {
  return {
    PORT: portOrZero({ default: 8080 }),
    HEADWATER_HOST: str({ default: "127.0.0.1" }),
    HEADWATER_DATA_DIR: str({ default: dataDirDefault }),
    HEADWATER_PUBLIC_URL: baseUrl({ default: undefined }),
    HEADWATER_ENDPOINT_URL: baseUrl({ default: undefined }),
    HEADWATER_BOOTSTRAP_KEY: str({ default: undefined }),
    HEADWATER_BOOTSTRAP_USERNAME: str({ default: "operator" }),
    HEADWATER_BOOTSTRAP_EMAIL: str({ default: "operator@localhost" }),
    HEADWATER_EVENT_STORE: str({ default: undefined }),
    HEADWATER_BUS: str({ default: "embedded" }),
    HEADWATER_NODE_ID: nodeId({ default: undefined }),
    HEADWATER_ROLES: roles({ default: [...ROLES] }),
    HEADWATER_SECRET_KEY: str({ default: undefined }),
    HEADWATER_MAX_BODY_BYTES: int(1024)({ default: 1024 * 1024 }),
    HEADWATER_FREE_DAILY_INVOCATIONS: int(0)({ default: 10_000 }),
    HEADWATER_FREE_DAILY_COMPUTE_MS: int(0)({ default: 30 * 60 * 1000 }),
    HEADWATER_TIMER_MIN_INTERVAL_SECONDS: int(1)({ default: 60 }),
    HEADWATER_RUNS_PER_OWNER: int(1)({ default: 4 }),
    HEADWATER_RUN_BATCH_MAX: int(1)({ default: 64 }),
    HEADWATER_RUNNER_WORKERS: int(1)({ default: undefined }),
    HEADWATER_WARM_ISOLATES: int(1)({ default: undefined }),
    HEADWATER_WARM_SOURCES: int(1)({ default: undefined }),
    HEADWATER_RUN_TIMEOUT_MS: int(1)({ default: undefined }),
    HEADWATER_RUN_MEMORY_MB: int(8)({ default: undefined }),
    // A source's state goes to the sandbox and back with every batch, and into the log with it.
    HEADWATER_DB_MAX_BYTES: intBetween(1024, 8 * 1024 * 1024)({ default: undefined }),
    HEADWATER_ALLOW_PRIVATE_NETWORKS: flag({ default: false }),
    HEADWATER_NPM_REGISTRY: baseUrl({ default: undefined }),
    HEADWATER_ENDPOINT_MAX_BODY_BYTES: int(1024)({ default: 512 * 1024 }),
    HEADWATER_ENDPOINT_RATE_PER_SECOND: int(1)({ default: 50 }),
    HEADWATER_ENDPOINT_BURST: int(1)({ default: 200 }),
    HEADWATER_SSE_HEARTBEAT_MS: int(100)({ default: 15_000 }),
    HEADWATER_SOURCE_BACKLOG: int(1)({ default: 1_000 }),
    HEADWATER_OWNER_BACKLOG: int(1)({ default: 10_000 }),
    HEADWATER_OWNER_BACKLOG_BYTES: int(1024)({ default: 32 * 1024 * 1024 }),
    HEADWATER_NODE_BACKLOG: int(1)({ default: 100_000 }),
    HEADWATER_NODE_BACKLOG_BYTES: int(1024)({ default: 256 * 1024 * 1024 }),
    HEADWATER_API_RATE_PER_SECOND: int(1)({ default: 100 }),
    HEADWATER_API_BURST: int(1)({ default: 1000 }),
    HEADWATER_ANONYMOUS_RATE_PER_SECOND: int(1)({ default: 10 }),
    HEADWATER_ANONYMOUS_BURST: int(1)({ default: 100 }),
    HEADWATER_TRUST_PROXY: flag({ default: false }),
    HEADWATER_REQUEST_TIMEOUT_MS: int(100)({ default: 60_000 }),
    HEADWATER_MAX_CONNECTIONS_PER_CLIENT: int(1)({ default: 256 }),
    HEADWATER_MAX_CONNECTIONS: int(1)({ default: undefined }),
    HEADWATER_RESPONSE_TIMEOUT_MS: int(100)({ default: undefined }),
    HEADWATER_SHUTDOWN_GRACE_MS: int(0)({ default: 30_000 }),
    HEADWATER_LOG_LEVEL: logLevel,
    HEADWATER_METRICS_TOKEN: str({ default: undefined }),
    HEADWATER_WEBHOOK_TIMEOUT_MS: int(100)({ default: 15_000 }),
    HEADWATER_WEBHOOK_RETRY_MS: int(10)({ default: 2_000 }),
    HEADWATER_WEBHOOK_RETRY_MAX_MS: int(10)({ default: 3_600_000 }),
    HEADWATER_WEBHOOK_DISABLE_AFTER_MS: int(1000)({ default: 3 * 24 * 3_600_000 }),
    HEADWATER_DELIVERY_SWEEP_MS: int(100)({ default: 5_000 }),
    HEADWATER_SMTP_URL: smtpUrl({ default: undefined }),
    HEADWATER_EMAIL_FROM: emailAddress({ default: undefined }),
    HEADWATER_S3_ENDPOINT: baseUrl({ default: undefined }),
    HEADWATER_S3_REGION: str({ default: "us-east-1" }),
    HEADWATER_S3_ACCESS_KEY_ID: str({ default: undefined }),
    HEADWATER_S3_SECRET_ACCESS_KEY: str({ default: undefined }),
    HEADWATER_S3_FORCE_PATH_STYLE: flag({ default: true }),
    HEADWATER_SEND_TIMEOUT_MS: int(100)({ default: 30_000 }),
  };
}

export type Config = ReturnType<typeof toConfig>;

function toConfig(env: ReturnType<typeof clean>) {
  const dataDir = path.resolve(env.HEADWATER_DATA_DIR);
  return {
    port: env.PORT,
    host: env.HEADWATER_HOST,
    dataDir,
    /** Base address clients reach this node on, without the /v1 prefix. */
    publicUrl: env.HEADWATER_PUBLIC_URL,
    /** Base address of source endpoints (a separate origin is safest); default the public URL. */
    endpointUrl: env.HEADWATER_ENDPOINT_URL,
    bootstrapKey: env.HEADWATER_BOOTSTRAP_KEY,
    bootstrapUsername: env.HEADWATER_BOOTSTRAP_USERNAME,
    bootstrapEmail: env.HEADWATER_BOOTSTRAP_EMAIL,
    eventStore: env.HEADWATER_EVENT_STORE ?? `sqlite:${path.join(dataDir, "events.db")}`,
    /** `embedded` or `kafka://host:port[,host:port…]`. */
    bus: env.HEADWATER_BUS,
    /** Names this node's reply topic; stable across restarts (kept in the data directory when not set). */
    nodeId: env.HEADWATER_NODE_ID,
    roles: env.HEADWATER_ROLES,
    secretKey: env.HEADWATER_SECRET_KEY,
    maxBodyBytes: env.HEADWATER_MAX_BODY_BYTES,
    freeDailyInvocations: env.HEADWATER_FREE_DAILY_INVOCATIONS,
    freeDailyComputeMs: env.HEADWATER_FREE_DAILY_COMPUTE_MS,
    timerMinSeconds: env.HEADWATER_TIMER_MIN_INTERVAL_SECONDS,
    /** Sources of one billed user that run at once on a runner node (the fairness bound). */
    runsPerOwner: env.HEADWATER_RUNS_PER_OWNER,
    /** Invocations of one source waiting together run with one sandbox entry and one append (capped at 128). */
    runBatchMax: env.HEADWATER_RUN_BATCH_MAX,
    runtime: {
      cacheDir: path.join(dataDir, "cache"),
      ...(env.HEADWATER_RUNNER_WORKERS !== undefined ? { workers: env.HEADWATER_RUNNER_WORKERS } : {}),
      ...(env.HEADWATER_WARM_ISOLATES !== undefined ? { maxWarmIsolates: env.HEADWATER_WARM_ISOLATES } : {}),
      ...(env.HEADWATER_WARM_SOURCES !== undefined ? { maxWarmContexts: env.HEADWATER_WARM_SOURCES } : {}),
      ...(env.HEADWATER_RUN_TIMEOUT_MS !== undefined ? { timeoutMs: env.HEADWATER_RUN_TIMEOUT_MS } : {}),
      ...(env.HEADWATER_RUN_MEMORY_MB !== undefined ? { memoryMb: env.HEADWATER_RUN_MEMORY_MB } : {}),
      ...(env.HEADWATER_DB_MAX_BYTES !== undefined ? { limits: { maxDbBytes: env.HEADWATER_DB_MAX_BYTES } } : {}),
      allowPrivateNetworks: env.HEADWATER_ALLOW_PRIVATE_NETWORKS,
      ...(env.HEADWATER_NPM_REGISTRY !== undefined ? { npmRegistry: env.HEADWATER_NPM_REGISTRY } : {}),
    } satisfies RuntimeOptions & { npmRegistry?: string },
    endpointMaxBodyBytes: env.HEADWATER_ENDPOINT_MAX_BODY_BYTES,
    endpointRatePerSecond: env.HEADWATER_ENDPOINT_RATE_PER_SECOND,
    endpointBurst: env.HEADWATER_ENDPOINT_BURST,
    sseHeartbeatMs: env.HEADWATER_SSE_HEARTBEAT_MS,
    /** Back-pressure: queued invocations admitted per source, per billed user and per node. */
    sourceBacklog: env.HEADWATER_SOURCE_BACKLOG,
    ownerBacklog: env.HEADWATER_OWNER_BACKLOG,
    ownerBacklogBytes: env.HEADWATER_OWNER_BACKLOG_BYTES,
    nodeBacklog: env.HEADWATER_NODE_BACKLOG,
    nodeBacklogBytes: env.HEADWATER_NODE_BACKLOG_BYTES,
    /** REST API: per API key, and per address for requests without a valid key. */
    apiRatePerSecond: env.HEADWATER_API_RATE_PER_SECOND,
    apiBurst: env.HEADWATER_API_BURST,
    anonymousRatePerSecond: env.HEADWATER_ANONYMOUS_RATE_PER_SECOND,
    anonymousBurst: env.HEADWATER_ANONYMOUS_BURST,
    /** Client addresses from X-Forwarded-For (behind a trusted reverse proxy). */
    trustProxy: env.HEADWATER_TRUST_PROXY,
    /** A request (headers and body) must be received whole within this (408 past it). */
    requestTimeoutMs: env.HEADWATER_REQUEST_TIMEOUT_MS,
    /** Open connections per client address (not applied behind a trusted proxy: they all come from it). */
    maxConnectionsPerClient: env.HEADWATER_MAX_CONNECTIONS_PER_CLIENT,
    /** Open connections in all; default: the open-files limit less a reserve (src/api/httpServer.ts). */
    maxConnections: env.HEADWATER_MAX_CONNECTIONS,
    /** How long an endpoint (custom response) or a manual run waits for the run's answer; default: run timeout + 15 s. */
    responseTimeoutMs: env.HEADWATER_RESPONSE_TIMEOUT_MS,
    /** How long SIGTERM lets requests and runs in flight finish before the node exits. */
    shutdownGraceMs: env.HEADWATER_SHUTDOWN_GRACE_MS,
    logLevel: env.HEADWATER_LOG_LEVEL,
    /** When set, /metrics wants it as a bearer token (or an operator's key); unset, /metrics is open to loopback clients only. */
    metricsToken: env.HEADWATER_METRICS_TOKEN,
    /** Webhook delivery: request timeout, the retry schedule (doubling from retryMs up to retryMaxMs), when a failing webhook is disabled. */
    webhookTimeoutMs: env.HEADWATER_WEBHOOK_TIMEOUT_MS,
    webhookRetryMs: env.HEADWATER_WEBHOOK_RETRY_MS,
    webhookRetryMaxMs: env.HEADWATER_WEBHOOK_RETRY_MAX_MS,
    webhookDisableAfterMs: env.HEADWATER_WEBHOOK_DISABLE_AFTER_MS,
    /** How often dispatchers look for webhook queues whose retry is due. */
    deliverySweepMs: env.HEADWATER_DELIVERY_SWEEP_MS,
    /** Where actions' $.send.email and $.send.s3 go (unset: those sends fail, saying what to set); $.send.http's guard. */
    destinations: {
      smtpUrl: env.HEADWATER_SMTP_URL,
      emailFrom: env.HEADWATER_EMAIL_FROM,
      s3:
        env.HEADWATER_S3_ENDPOINT !== undefined
          ? {
              endpoint: env.HEADWATER_S3_ENDPOINT,
              region: env.HEADWATER_S3_REGION,
              accessKeyId: env.HEADWATER_S3_ACCESS_KEY_ID ?? "",
              secretAccessKey: env.HEADWATER_S3_SECRET_ACCESS_KEY ?? "",
              forcePathStyle: env.HEADWATER_S3_FORCE_PATH_STYLE,
            }
          : undefined,
      allowPrivateNetworks: env.HEADWATER_ALLOW_PRIVATE_NETWORKS,
      timeoutMs: env.HEADWATER_SEND_TIMEOUT_MS,
    } satisfies DestinationOptions,
  };
}

/** Variables that only make sense together (envalid checks them one by one). */
function togetherProblems(env: ReturnType<typeof clean>): string[] {
  const problems: string[] = [];
  if (env.HEADWATER_SMTP_URL !== undefined && env.HEADWATER_EMAIL_FROM === undefined)
    problems.push("HEADWATER_EMAIL_FROM is required with HEADWATER_SMTP_URL (the From of emails actions send)");
  if (env.HEADWATER_EMAIL_FROM !== undefined && env.HEADWATER_SMTP_URL === undefined)
    problems.push("HEADWATER_SMTP_URL is required with HEADWATER_EMAIL_FROM (the server emails go through)");
  const s3Keys = [env.HEADWATER_S3_ACCESS_KEY_ID, env.HEADWATER_S3_SECRET_ACCESS_KEY];
  if (env.HEADWATER_S3_ENDPOINT !== undefined && s3Keys.some((k) => k === undefined || k === ""))
    problems.push("HEADWATER_S3_ACCESS_KEY_ID and HEADWATER_S3_SECRET_ACCESS_KEY are required with HEADWATER_S3_ENDPOINT");
  if (env.HEADWATER_S3_ENDPOINT === undefined && s3Keys.some((k) => k !== undefined))
    problems.push("HEADWATER_S3_ENDPOINT is required with HEADWATER_S3_ACCESS_KEY_ID / HEADWATER_S3_SECRET_ACCESS_KEY");
  return problems;
}

function clean(env: NodeJS.ProcessEnv, dataDirDefault: string) {
  return cleanEnv(env, specs(dataDirDefault), {
    // One error naming every bad variable, instead of envalid's print-and-exit.
    reporter: ({ errors }: ReporterOptions<ReturnType<typeof specs>>) => {
      const bad = Object.entries(errors).map(([name, error]) => `${name} ${(error as Error | undefined)?.message ?? "is invalid"}`);
      if (bad.length > 0)
        throw new DomainError(
          "invalid_config",
          `invalid configuration: ${bad.join("; ")}`,
          bad.map((message) => ({ path: message.split(" ")[0], message })),
        );
    },
  });
}

/** The node's configuration from the environment (validated once; throws invalid_config listing every problem). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = clean(env, "data");
  const problems = togetherProblems(cleaned);
  if (problems.length > 0)
    throw new DomainError(
      "invalid_config",
      `invalid configuration: ${problems.join("; ")}`,
      problems.map((message) => ({ path: message.split(" ")[0], message })),
    );
  return toConfig(cleaned);
}
