import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";

// The machine's PostgreSQL (127.0.0.1:5432, trust auth, database `test`; .ci/run starts it when down).
// When it is unreachable the tests that need it fail, never skip.
export const postgresTestUrl = process.env.HEADWATER_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const created = new Set<string>();

/** A fresh schema name (created by the first store that opens it) on the test database, dropped after the run. */
export function newTestSchema(): string {
  const schema = `hw_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  created.add(schema);
  return schema;
}

/** The event store URL of a schema of its own on the test database. */
export function postgresStoreUrl(schema: string = newTestSchema()): string {
  return `${postgresTestUrl}?schema=${schema}`;
}

export async function dropTestSchemas(): Promise<void> {
  if (created.size === 0) return;
  const schemas = [...created];
  created.clear();
  const client = new pg.Client({ connectionString: postgresTestUrl });
  await client.connect();
  try {
    // A server left running must not make the run hang here.
    await client.query("SET lock_timeout = '10s'");
    for (const schema of schemas) {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((error: Error) => {
        process.stderr.write(`could not drop test schema ${schema}: ${error.message}\n`);
      });
    }
  } finally {
    await client.end();
  }
}

// A root hook (mocha's `after` outside any describe): runs once, after every test file stopped its servers.
if (typeof globalThis.after === "function") {
  after(async function () {
    this.timeout(60_000);
    await dropTestSchemas();
  });
}

/** A PostgreSQL server of a test's own (its own data directory and port), to stop and start at will. */
export interface PrivatePostgres {
  /** The event store URL of a fresh schema on it. */
  readonly storeUrl: string;
  /** Stops it the way a crash would (`pg_ctl stop -m immediate`); its data is kept. */
  crash(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  dispose(): Promise<void>;
}

/**
 * initdb + pg_ctl from the machine's PostgreSQL installation into a temporary directory, on a free
 * loopback port; as root the server runs as the `postgres` user (PostgreSQL refuses root).
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-pg-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) execFileSync("chown", ["postgres", dir]);
  const pgRun = (command: string, args: string[]) =>
    execFileSync(asRoot ? "runuser" : command, asRoot ? ["-u", "postgres", "--", command, ...args] : args, {
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    });
  const port = await freePort();
  const data = path.join(dir, "data");
  pgRun("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const start = async () => {
    pgRun("pg_ctl", [
      "-D",
      data,
      "-w",
      "-l",
      path.join(dir, "log"),
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "start",
    ]);
  };
  await start();
  const schema = `hw_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  return {
    storeUrl: `postgres://postgres@127.0.0.1:${port}/postgres?schema=${schema}`,
    crash: async () => {
      pgRun("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
    },
    start,
    dispose: async () => {
      try {
        pgRun("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      } catch {
        // not running
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
