import { LRUCache } from "lru-cache";
import type { ComponentsReadModel, SavedComponent } from "../readModels/components.js";

/** A saved component ready to run or deploy: its parsed metadata and bundle. */
export type LoadedComponent = SavedComponent;

/** Saved components never change, so parsed ones are kept by id (bundles are large: parsing them once matters). */
export class ComponentCache {
  readonly #cache = new LRUCache<string, LoadedComponent>({ max: 500 });

  constructor(private readonly components: ComponentsReadModel) {}

  get(componentId: string): LoadedComponent | undefined {
    const cached = this.#cache.get(componentId);
    if (cached) return cached;
    const loaded = this.components.component(componentId);
    if (loaded) this.#cache.set(componentId, loaded);
    return loaded;
  }
}
