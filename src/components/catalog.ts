import type { EventStore } from "../store/eventStore.js";
import { handleCommand } from "../../commands/handler.js";
import { component as componentEvolver, componentStream, REGISTRY_OWNER } from "../../commands/components/component.js";
import { saveComponent } from "../../commands/components/save.js";
import { CommandRejected } from "../../commands/decider.js";
import type { ComponentRuntime } from "../runner/componentRuntime.js";
import { ComponentCache, storedMeta, type LoadedComponent } from "../runner/components.js";
import type { ComponentRow, SourcesReadModel } from "../readModels/sources.js";
import { newId, type Clock } from "../ids.js";
import type { PreparedComponent } from "../runtime/types.js";

export interface CatalogDeps {
  readonly store: EventStore;
  readonly runtime: ComponentRuntime;
  readonly sources: SourcesReadModel;
  readonly components: ComponentCache;
  readonly clock: Clock;
  /** Fetches component code from a URL through the guarded outbound client. */
  readonly fetchCode: (url: string) => Promise<string>;
}

export interface SavedComponent {
  readonly componentId: string;
  /** Log position of the save; undefined when identical code was saved before. */
  readonly position: number | undefined;
}

/**
 * Saved components: code in, sc_ id out. Saving code the owner already saved (same code and URL)
 * returns the existing component; a different code under an existing key becomes the key's new
 * target, the old id keeps working.
 */
export class ComponentCatalog {
  constructor(private readonly deps: CatalogDeps) {}

  async save(ownerId: string, input: { code?: string; url?: string }, metadata: Record<string, unknown>): Promise<SavedComponent> {
    const url = input.url ?? null;
    const code = input.code ?? (url !== null ? await this.deps.fetchCode(url) : undefined);
    if (code === undefined) throw new CommandRejected("invalid_request", "give component_code or component_url", 400);
    const prepared = await this.deps.runtime.prepare({ code, ...(url !== null ? { url } : {}) });
    const existing = this.deps.sources.componentByHash(ownerId, prepared.codeHash, url);
    if (existing) return { componentId: existing.id, position: undefined };
    if (ownerId === REGISTRY_OWNER) throw new CommandRejected("invalid_request", "registry components are published, not saved", 400);
    return appendComponent(this.deps, ownerId, code, url, prepared, metadata);
  }

  /** A component the owner may use: its own (or its org's), or a registry component. */
  usable(componentId: string, canSee: (ownerId: string) => boolean): LoadedComponent | undefined {
    const loaded = this.deps.components.get(componentId);
    if (!loaded || (loaded.ownerId !== REGISTRY_OWNER && !canSee(loaded.ownerId))) return undefined;
    return loaded;
  }

  byKey(ownerId: string, key: string): ComponentRow | undefined {
    return this.deps.sources.componentByKey(ownerId, key);
  }
}

/** Appends a ComponentSaved for prepared code. */
export async function appendComponent(
deps: Pick<CatalogDeps, "store" | "clock">,
  ownerId: string,
  code: string,
  url: string | null,
  prepared: PreparedComponent,
  metadata: Record<string, unknown>,
  id = newId("sc"),
): Promise<SavedComponent> {
  const handled = await handleCommand(deps.store, componentStream(id), componentEvolver, saveComponent, {
    id,
    ownerId,
    key: prepared.meta.key ?? null,
    name: prepared.meta.name,
    version: prepared.meta.version,
    type: prepared.meta.type,
    description: prepared.meta.description ?? null,
    code,
    codeHash: prepared.codeHash,
    url,
    configurableProps: prepared.configurableProps,
    meta: storedMeta(prepared) as unknown as Record<string, unknown>,
    at: Math.floor(deps.clock.now() / 1000),
  }, { metadata });
  return { componentId: id, position: handled.position };
}
