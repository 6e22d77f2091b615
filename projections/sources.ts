import type { Projection } from "../src/projector/projection.js";
import type { SourceDeployed, SourceEvent } from "../commands/sources/source.js";
import { bumpCount, countTable } from "./counts.js";
import { statement } from "../src/readModels/statements.js";

/** A row of `sources`: configured_props is the stored JSON (secrets sealed). */
export interface SourceRow {
  id: string;
  owner_id: string;
  creator_id: string;
  component_id: string;
  name: string;
  name_slug: string;
  endpoint_id: string;
  configured_props: string;
  /** The props additionalProps() added (JSON), or null. */
  additional_props: string | null;
  active: number;
  created_at: number;
  updated_at: number;
  seq: number;
}

const additionalPropsJson = (props: SourceDeployed["data"]["additionalProps"]): string | null =>
  props && props.length > 0 ? JSON.stringify(props) : null;

export const sourcesProjection: Projection = {
  name: "sources",
  // 2: additional_props, the props a source's additionalProps() added.
  version: 2,
  tables: ["sources", "source_counts"],
  schema: [
    `CREATE TABLE IF NOT EXISTS sources (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, creator_id TEXT NOT NULL, component_id TEXT NOT NULL,
      name TEXT NOT NULL, name_slug TEXT NOT NULL, endpoint_id TEXT NOT NULL UNIQUE, configured_props TEXT NOT NULL,
      additional_props TEXT, active INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS sources_by_owner ON sources (owner_id, seq)",
    // Every deploy asks whether a name_slug is taken: without it, a scan of all the owner's sources.
    "CREATE INDEX IF NOT EXISTS sources_by_owner_slug ON sources (owner_id, name_slug)",
    countTable("source_counts"),
  ],
  handles: new Set(["SourceDeployed", "SourceUpdated", "SourceDeleted"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as SourceEvent;
    switch (event.type) {
      case "SourceDeployed": {
        const d = event.data;
        statement(
          db,
          `INSERT INTO sources (id, owner_id, creator_id, component_id, name, name_slug, endpoint_id, configured_props,
            additional_props, active, created_at, updated_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          d.id,
          d.ownerId,
          d.creatorId,
          d.componentId,
          d.name,
          d.nameSlug,
          d.endpointId,
          JSON.stringify(d.configuredProps),
          additionalPropsJson(d.additionalProps),
          d.active ? 1 : 0,
          d.at,
          d.at,
          recorded.position,
        );
        bumpCount(db, "source_counts", d.ownerId, 1);
        break;
      }
      case "SourceUpdated": {
        const d = event.data;
        statement(
          db,
          `UPDATE sources SET component_id = ?, name = ?, name_slug = ?, configured_props = ?, additional_props = ?, active = ?,
           updated_at = ? WHERE id = ?`,
        ).run(
          d.componentId,
          d.name,
          d.nameSlug,
          JSON.stringify(d.configuredProps),
          additionalPropsJson(d.additionalProps),
          d.active ? 1 : 0,
          d.at,
          d.id,
        );
        break;
      }
      case "SourceDeleted":
        statement(db, "DELETE FROM sources WHERE id = ?").run(event.data.id);
        bumpCount(db, "source_counts", event.data.ownerId, -1);
        break;
    }
  },
};
