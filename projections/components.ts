import semver from "semver";
import type { Projection } from "../src/projector/projection.js";
import { REGISTRY_OWNER, type ComponentEvent } from "../commands/components/component.js";
import { statement } from "../src/readModels/statements.js";

/** A row of `components`: configurable_props and meta are JSON. */
export interface ComponentRow {
  id: string;
  owner_id: string;
  key: string | null;
  name: string;
  version: string;
  type: string;
  description: string | null;
  code: string;
  code_hash: string;
  url: string | null;
  configurable_props: string;
  meta: string;
  created_at: number;
  seq: number;
}

export const componentsProjection: Projection = {
  name: "components",
  version: 1,
  tables: ["components", "component_keys"],
  schema: [
    `CREATE TABLE IF NOT EXISTS components (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, key TEXT, name TEXT NOT NULL, version TEXT NOT NULL,
      type TEXT NOT NULL, description TEXT, code TEXT NOT NULL, code_hash TEXT NOT NULL, url TEXT,
      configurable_props TEXT NOT NULL, meta TEXT NOT NULL, created_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS components_by_hash ON components (owner_id, code_hash)",
    // The component a key names in its owner's namespace: the latest save, or for the registry the highest version.
    `CREATE TABLE IF NOT EXISTS component_keys (
      owner_id TEXT NOT NULL, key TEXT NOT NULL, component_id TEXT NOT NULL, version TEXT NOT NULL,
      PRIMARY KEY (owner_id, key))`,
  ],
  handles: new Set(["ComponentSaved"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as ComponentEvent;
    const d = event.data;
    statement(
      db,
      `INSERT INTO components (id, owner_id, key, name, version, type, description, code, code_hash, url,
        configurable_props, meta, created_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      d.id,
      d.ownerId,
      d.key,
      d.name,
      d.version,
      d.type,
      d.description,
      d.code,
      d.codeHash,
      d.url,
      JSON.stringify(d.configurableProps),
      JSON.stringify(d.meta),
      d.at,
      recorded.position,
    );
    if (!d.key) return;
    const current = statement<[string, string], { version: string }>(
      db,
      "SELECT version FROM component_keys WHERE owner_id = ? AND key = ?",
    ).get(d.ownerId, d.key);
    const replaces = !current || d.ownerId !== REGISTRY_OWNER || !semver.valid(current.version) || semver.gte(d.version, current.version);
    if (replaces) {
      statement(
        db,
        `INSERT INTO component_keys (owner_id, key, component_id, version) VALUES (?, ?, ?, ?)
         ON CONFLICT(owner_id, key) DO UPDATE SET component_id = excluded.component_id, version = excluded.version`,
      ).run(d.ownerId, d.key, d.id, d.version);
    }
  },
};
