// Saved components and the public registry: code in, sc_ id out. The rules (saved code never
// changes, registry keys and semantic versions, key@version immutable) are the component decider's
// and the names'; this prepares the code in the sandbox and answers an identical save with the
// component saved before.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { EventStore } from "../store/eventStore.js";
import { CommandHandler, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import {
  component as componentDecider,
  REGISTRY_OWNER,
  type ComponentSaved,
  type SaveComponent,
} from "../../commands/components/component.js";
import { Names } from "../../commands/names/claims.js";
import { streams } from "../../commands/streams.js";
import { DomainError } from "../../commands/decider.js";
import type { ComponentRuntime, ComponentSource } from "../runtime/componentRuntime.js";
import { storedMeta, type ComponentsReadModel, type StoredComponentMeta } from "../readModels/components.js";
import type { ComponentCache, LoadedComponent } from "./componentCache.js";
import { newId, type Clock } from "../ids.js";
import { codeHash } from "../runtime/index.js";
import type { PreparedComponent } from "../runtime/types.js";

/** The registry/ folder of the repository: components we write and publish with every install. */
export const registryDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "registry");

export interface CatalogDeps {
  readonly store: EventStore;
  readonly runtime: ComponentRuntime;
  readonly components: ComponentsReadModel;
  readonly cache: ComponentCache;
  readonly clock: Clock;
  /** Fetches component code from a URL through the guarded outbound client. */
  readonly fetchCode: (url: string) => Promise<string>;
}

export interface Saved {
  readonly componentId: string;
  /** Log position of the save; undefined when identical code was saved before. */
  readonly position: number | undefined;
}

/** Code `prepare`d but not saved yet. */
export interface Unsaved {
  /** The component as it will read once saved (or the identical one saved before). */
  readonly component: LoadedComponent;
  /** The command that saves it; undefined when the owner saved identical code before. */
  readonly command: SaveComponent | undefined;
}

export class ComponentCatalog {
  readonly #components: HandlerOf<typeof componentDecider>;
  readonly #names: Names;

  constructor(private readonly deps: Omit<CatalogDeps, "fetchCode"> & Partial<Pick<CatalogDeps, "fetchCode">>) {
    this.#components = new CommandHandler(deps.store, componentDecider, streams.component);
    this.#names = new Names(deps.store);
  }

  /**
   * Saves code for an owner: given inline, fetched from a URL, or uploaded as files with an entry
   * (a multi-file component; its URL is then only metadata). The same code (and URL) saved before
   * answers that component.
   */
  async save(
    ownerId: string,
    input: { code?: string; url?: string; files?: Record<string, string>; entry?: string },
    options: HandleOptions = {},
  ): Promise<Saved> {
    return this.commit(await this.prepare(ownerId, input), options);
  }

  /**
   * What `save` would save, without saving it: the code is fetched, prepared and checked, and the
   * component it becomes is ready to check props against and to run hooks with. Nothing is written
   * until `commit`, so a deploy that is refused afterwards leaves the catalog (and the owner's keys)
   * as it was.
   */
  async prepare(ownerId: string, input: { code?: string; url?: string; files?: Record<string, string>; entry?: string }): Promise<Unsaved> {
    const url = input.url ?? null;
    let source: ComponentSource;
    if (input.files) {
      const entry = input.entry ?? "";
      if (!Object.prototype.hasOwnProperty.call(input.files, entry)) {
        throw new DomainError("invalid_request", `component_entry "${entry}" is not one of component_files`, [
          { path: "body.component_entry", message: "must name one of component_files" },
        ]);
      }
      source = { code: input.files[entry], files: input.files, entry };
    } else {
      const code = input.code ?? (url !== null ? await this.#fetch(url) : undefined);
      if (code === undefined) throw new DomainError("invalid_request", "give component_code, component_files or component_url");
      source = { code, ...(url !== null ? { url } : {}) };
    }
    const prepared = await this.deps.runtime.prepare(source);
    const existingId = this.deps.components.idByHash(ownerId, prepared.codeHash, url);
    const existing = existingId === undefined ? undefined : this.deps.cache.get(existingId);
    if (existing) return { component: existing, command: undefined };
    const id = newId("sc");
    const data = savedData(id, ownerId, source.code, url, prepared, this.deps.clock);
    const command: SaveComponent = {
      type: "SaveComponent",
      data: source.files ? { ...data, files: { ...source.files }, entry: source.entry! } : data,
    };
    // The decider's rules now, so that commit is refused only by what happens in between.
    componentDecider.decide(command, componentDecider.initialState());
    return { component: loadedFrom(data), command };
  }

  /** Saves what `prepare` answered (nothing when identical code was saved before). */
  async commit(unsaved: Unsaved, options: HandleOptions = {}): Promise<Saved> {
    if (!unsaved.command) return { componentId: unsaved.component.id, position: undefined };
    const saved = await this.#components.handle(unsaved.command.data.id, unsaved.command, options);
    return { componentId: unsaved.command.data.id, position: saved.position };
  }

  /** A component the caller may use: its own (or its org's, by `canSee`), or a registry component. */
  usable(componentId: string, canSee: (ownerId: string) => boolean): LoadedComponent | undefined {
    const loaded = this.deps.cache.get(componentId);
    if (!loaded || (loaded.ownerId !== REGISTRY_OWNER && !canSee(loaded.ownerId))) return undefined;
    return loaded;
  }

  /** The component a key names in an owner's namespace (REGISTRY_OWNER: the highest published version). */
  byKey(ownerId: string, key: string): LoadedComponent | undefined {
    const id = this.deps.components.idByKey(ownerId, key);
    return id === undefined ? undefined : this.deps.cache.get(id);
  }

  /** Publishes to the public registry: key@version is claimed first, so it names one code forever. */
  async publish(code: string, options: HandleOptions = {}): Promise<Saved & { published: boolean; key: string; version: string }> {
    const prepared = await this.deps.runtime.prepare({ code });
    const id = newId("sc");
    const data = savedData(id, REGISTRY_OWNER, code, null, prepared, this.deps.clock);
    // The decider's rules (key, semantic version) before anything is claimed.
    componentDecider.decide({ type: "PublishComponent", data }, componentDecider.initialState());
    const key = data.key!;
    const name = `${key}@${data.version}`;
    const existing = await this.#publishedAs(name, prepared.codeHash);
    if (existing) return { componentId: existing, position: undefined, published: false, key, version: data.version };
    try {
      await this.#names.claim({ scope: "registry", name, holder: id, at: data.at }, options);
    } catch (error) {
      // Another node publishing the same file at the same moment won the claim.
      const winner =
        error instanceof DomainError && error.code === "name_taken" ? await this.#publishedAs(name, prepared.codeHash) : undefined;
      if (winner) return { componentId: winner, position: undefined, published: false, key, version: data.version };
      throw error;
    }
    const published = await this.#components.handle(id, { type: "PublishComponent", data }, options);
    return { componentId: id, position: published.position, published: true, key, version: data.version };
  }

  /** Publishes every registry/ file not published yet (idempotent: key@version is immutable). */
  async publishRegistry(waitFor: (position: number) => Promise<void>, dir = registryDir): Promise<string[]> {
    if (!fs.existsSync(dir)) return [];
    const published: string[] = [];
    for (const file of fs
      .readdirSync(dir)
      .filter((f) => /\.(m?js|ts)$/.test(f))
      .sort()) {
      const code = fs.readFileSync(path.join(dir, file), "utf8");
      // Already published as is: skip bundling and loading it again at every start.
      if (this.deps.components.idByHash(REGISTRY_OWNER, codeHash(code), null)) continue;
      const result = await this.publish(code, { metadata: { by: "registry" } });
      if (result.position !== undefined) await waitFor(result.position);
      if (result.published) published.push(file);
    }
    return published;
  }

  /** The component holding key@version, if it has this code; a different code there is a conflict. */
  async #publishedAs(name: string, hash: string): Promise<string | undefined> {
    const holder = await this.#names.holder("registry", name);
    if (!holder) return undefined;
    for (let attempt = 0; attempt < 50; attempt++) {
      const [saved] = await this.deps.store.readStream(streams.component(holder), { maxCount: 1 });
      if (saved) {
        if ((saved.data as ComponentSaved["data"]).codeHash === hash) return holder;
        throw new DomainError("name_taken", `${name} is already published with different code: publish a new version`);
      }
      // The claim is written just before the component: give its publisher a moment.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new DomainError("name_taken", `${name} is claimed but its component never appeared`);
  }

  #fetch(url: string): Promise<string> {
    if (!this.deps.fetchCode) throw new DomainError("invalid_request", "component_url cannot be fetched here");
    return this.deps.fetchCode(url);
  }
}

function savedData(
  id: string,
  ownerId: string,
  code: string,
  url: string | null,
  prepared: PreparedComponent,
  clock: Clock,
): ComponentSaved["data"] {
  return {
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
    at: Math.floor(clock.now() / 1000),
  };
}

/** A component not saved yet as the read model will answer it once it is (JSON fields as they come back). */
function loadedFrom(data: ComponentSaved["data"]): LoadedComponent {
  return {
    id: data.id,
    ownerId: data.ownerId,
    key: data.key,
    name: data.name,
    version: data.version,
    type: data.type,
    description: data.description,
    code: data.code,
    codeHash: data.codeHash,
    url: data.url,
    configurableProps: JSON.parse(JSON.stringify(data.configurableProps)) as LoadedComponent["configurableProps"],
    meta: JSON.parse(JSON.stringify(data.meta)) as StoredComponentMeta,
    createdAt: data.at,
  };
}
