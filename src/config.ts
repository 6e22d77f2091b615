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
  };
}
