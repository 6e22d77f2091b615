import { LRUCache } from "lru-cache";
import type { ComponentMeta, ConfigurableProp, PreparedComponent } from "../runtime/types.js";
import type { ComponentRow, SourcesReadModel } from "../readModels/sources.js";

/** What ComponentSaved.meta holds: the runtime's findings and the bundle the isolate runs. */
export interface StoredComponentMeta {
  readonly component: ComponentMeta;
  readonly bundle: string;
  readonly bundleHash: string;
  readonly packages: PreparedComponent["packages"];
  readonly modules: PreparedComponent["modules"];
}

export interface LoadedComponent {
  readonly id: string;
  readonly ownerId: string;
  readonly codeHash: string;
  readonly configurableProps: ConfigurableProp[];
  readonly meta: StoredComponentMeta;
  readonly row: ComponentRow;
}

export const storedMeta = (prepared: PreparedComponent): StoredComponentMeta => ({
  component: prepared.meta,
  bundle: prepared.bundle,
  bundleHash: prepared.bundleHash,
  packages: prepared.packages,
  modules: prepared.modules,
});

/** Saved components never change, so parsed ones are cached by id. */
export class ComponentCache {
  readonly #cache = new LRUCache<string, LoadedComponent>({ max: 500 });

  constructor(private readonly sources: SourcesReadModel) {}

  get(componentId: string): LoadedComponent | undefined {
    const cached = this.#cache.get(componentId);
    if (cached) return cached;
    const row = this.sources.component(componentId);
    if (!row) return undefined;
    const loaded: LoadedComponent = {
      id: row.id,
      ownerId: row.owner_id,
      codeHash: row.code_hash,
      configurableProps: JSON.parse(row.configurable_props) as ConfigurableProp[],
      meta: JSON.parse(row.meta) as StoredComponentMeta,
      row,
    };
    this.#cache.set(componentId, loaded);
    return loaded;
  }
}
