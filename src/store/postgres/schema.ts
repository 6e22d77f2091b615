import { createHash } from "node:crypto";
import type { ClientBase } from "pg";

/** Where one event store lives inside a PostgreSQL database. */
export interface PostgresLayout {
  /** Quoted schema name, ready for SQL. */
  readonly schema: string;
  /** NOTIFY channel woken on every commit (channel names are at most 63 bytes). */
  readonly channel: string;
  /** Advisory lock held by every append transaction: serializes commits, so position order is commit order. */
  readonly appendLock: readonly [number, number];
  readonly migrationLock: readonly [number, number];
}

// "HW" in the advisory-lock class id keeps Headwater's locks apart from anyone else's.
const appendLockClass = 0x4857_0001;
const migrationLockClass = 0x4857_0002;

export function layoutFor(schemaName: string): PostgresLayout {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schemaName)) {
    throw new TypeError(`schema name must be a lower-case SQL identifier, got ${JSON.stringify(schemaName)}`);
  }
  const hash = createHash("sha256").update(schemaName).digest();
  const objectId = hash.readInt32BE(0);
  return {
    schema: `"${schemaName}"`,
    channel: `headwater_events_${hash.toString("hex").slice(0, 16)}`,
    appendLock: [appendLockClass, objectId],
    migrationLock: [migrationLockClass, objectId],
  };
}

/** Creates the tables once; the advisory lock keeps several starting processes from racing on DDL. */
export async function migrate(client: ClientBase, layout: PostgresLayout): Promise<void> {
  const { schema } = layout;
  await client.query("SELECT pg_advisory_lock($1, $2)", [...layout.migrationLock]);
  try {
    await client.query(`
      CREATE SCHEMA IF NOT EXISTS ${schema};
      CREATE TABLE IF NOT EXISTS ${schema}.events (
        position bigint PRIMARY KEY,
        stream   text   NOT NULL,
        revision bigint NOT NULL,
        id       uuid   NOT NULL UNIQUE,
        type     text   NOT NULL,
        -- json, not jsonb: keeps the text as written (jsonb refuses \\u0000 and reorders keys).
        data     json   NOT NULL,
        metadata json   NOT NULL,
        created  bigint NOT NULL,
        UNIQUE (stream, revision)
      );
      -- The last revision per stream; kept when its events are truncated.
      CREATE TABLE IF NOT EXISTS ${schema}.streams (
        stream   text   PRIMARY KEY,
        revision bigint NOT NULL
      );
      -- The last position handed out; never moves back, even when the newest events are truncated.
      CREATE TABLE IF NOT EXISTS ${schema}.head (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        position  bigint  NOT NULL
      );
      INSERT INTO ${schema}.head (position) VALUES (0) ON CONFLICT DO NOTHING;
    `);
  } finally {
    await client.query("SELECT pg_advisory_unlock($1, $2)", [...layout.migrationLock]);
  }
}
