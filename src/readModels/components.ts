import type { Database } from "better-sqlite3";
import type { ComponentRow } from "../../projections/components.js";
import type { ComponentMeta, ConfigurableProp, PreparedComponent } from "../runtime/types.js";
import { statement } from "./statements.js";

/** What ComponentSaved.meta holds: the runtime's findings and the bundle the isolate runs. */
export interface StoredComponentMeta {
  readonly component: ComponentMeta;
  readonly bundle: string;
  readonly bundleHash: string;
  readonly packages: PreparedComponent["packages"];
  readonly modules: PreparedComponent["modules"];
}

export const storedMeta = (prepared: PreparedComponent): StoredComponentMeta => ({
  component: prepared.meta,
  bundle: prepared.bundle,
  bundleHash: prepared.bundleHash,
  packages: prepared.packages,
  modules: prepared.modules,
});

/** A saved component as the application sees it (saved code never changes). */
export interface SavedComponent {
  readonly id: string;
  /** u_/o_ id, or "registry". */
  readonly ownerId: string;
  readonly key: string | null;
  readonly name: string;
  readonly version: string;
  readonly type: string;
  readonly description: string | null;
  readonly code: string;
  readonly codeHash: string;
  readonly url: string | null;
  readonly configurableProps: ConfigurableProp[];
  readonly meta: StoredComponentMeta;
  readonly createdAt: number;
}

const toComponent = (row: ComponentRow): SavedComponent => ({
  id: row.id,
  ownerId: row.owner_id,
  key: row.key,
  name: row.name,
  version: row.version,
  type: row.type,
  description: row.description,
  code: row.code,
  codeHash: row.code_hash,
  url: row.url,
  configurableProps: JSON.parse(row.configurable_props) as ConfigurableProp[],
  meta: JSON.parse(row.meta) as StoredComponentMeta,
  createdAt: row.created_at,
});

/** Queries over the components read model (projections/components.ts). */
export class ComponentsReadModel {
  constructor(private readonly db: Database) {}

  component(id: string): SavedComponent | undefined {
    const row = statement<[string], ComponentRow>(this.db, "SELECT * FROM components WHERE id = ?").get(id);
    return row && toComponent(row);
  }

  /** The id a key names in an owner's namespace: the latest save, or for the registry the highest version. */
  idByKey(ownerId: string, key: string): string | undefined {
    return statement<[string, string], { component_id: string }>(
      this.db,
      "SELECT component_id FROM component_keys WHERE owner_id = ? AND key = ?",
    ).get(ownerId, key)?.component_id;
  }

  /** The newest component of an owner with this code (and URL): saving it again answers this one. */
  idByHash(ownerId: string, codeHash: string, url: string | null): string | undefined {
    return statement<[string, string, string | null], { id: string }>(
      this.db,
      "SELECT id FROM components WHERE owner_id = ? AND code_hash = ? AND url IS ? ORDER BY seq DESC LIMIT 1",
    ).get(ownerId, codeHash, url)?.id;
  }
}
