import { randomUUID } from "node:crypto";
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
