import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";
import { appendComponent, type CatalogDeps, type SavedComponent } from "./catalog.js";
import { handleCommand } from "../../commands/handler.js";
import { CommandRejected } from "../../commands/decider.js";
import { componentStream, REGISTRY_OWNER } from "../../commands/components/component.js";
import { nameStream, uniqueName } from "../../commands/names/name.js";
import { claimName } from "../../commands/names/claim.js";
import { newId } from "../ids.js";
import { codeHash } from "../runtime/index.js";
import type { Projector } from "../projector/projector.js";

/** The registry/ folder of the repository: components we write and publish with every install. */
export const registryDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "registry");

/** Publishes every registry/ component not yet published (key@version is immutable, so this is idempotent). */
export async function publishRegistry(
  deps: Pick<CatalogDeps, "store" | "clock" | "runtime" | "sources">,
  projector: Projector,
  dir = registryDir,
): Promise<string[]> {
  if (!fs.existsSync(dir)) return [];
  const published: string[] = [];
  for (const file of fs.readdirSync(dir).filter((f) => /\.(m?js|ts)$/.test(f)).sort()) {
    const code = fs.readFileSync(path.join(dir, file), "utf8");
    // Already published as is: skip bundling and loading it again at every start.
    if (deps.sources.componentByHash(REGISTRY_OWNER, codeHash(code), null)) continue;
    const result = await publishComponent(deps, code, { by: "registry" });
    if (result.position !== undefined) await projector.waitFor(result.position);
    if (result.published) published.push(file);
  }
  return published;
}

/** Publishes to the public registry: needs a key and a semantic version; key@version is immutable. */
export async function publishComponent(
deps: Pick<CatalogDeps, "store" | "clock" | "runtime">,
code: string,
metadata: Record<string, unknown>,
): Promise<SavedComponent & { published: boolean; key: string; version: string }> {
  const prepared = await deps.runtime.prepare({ code });
  const { key, version } = prepared.meta;
  if (!key) throw new CommandRejected("invalid_component", "a registry component needs a key", 400);
  if (!/^[a-z0-9]+(?:_[a-z0-9]+)*-[a-z0-9]+(?:-[a-z0-9]+)*$/.test(key)) {
    throw new CommandRejected("invalid_component", `registry key "${key}" must look like app_slug-slugified-name`, 400);
  }
  if (!semver.valid(version)) throw new CommandRejected("invalid_component", `registry version "${version}" is not a semantic version`, 400);
  const name = `${key}@${version}`;
  // The claim on key@version names the component that holds it: publishing the same code again is a no-op.
  const existing = await publishedAs(deps, name, prepared.codeHash);
  if (existing) return { componentId: existing, position: undefined, published: false, key, version };
  const id = newId("sc");
  try {
    await handleCommand(deps.store, nameStream("registry", name), uniqueName, claimName,
      { scope: "registry", name, holder: id, at: Math.floor(deps.clock.now() / 1000) }, { metadata });
  } catch (error) {
    // Another node publishing the same file at the same moment won the claim.
    const winner = error instanceof CommandRejected && error.code === "name_taken" ? await publishedAs(deps, name, prepared.codeHash) : undefined;
    if (winner) return { componentId: winner, position: undefined, published: false, key, version };
    throw error;
  }
  const saved = await appendComponent(deps, REGISTRY_OWNER, code, null, prepared, metadata, id);
  return { ...saved, published: true, key, version };
}

/** The component holding key@version, if it has this code; a different code there is a conflict. */
async function publishedAs(deps: Pick<CatalogDeps, "store">, name: string, codeHash: string): Promise<string | undefined> {
  const claims = await deps.store.readStream(nameStream("registry", name));
  const holder = claims.reduce<string | undefined>((h, e) => (e.type === "NameClaimed" ? (e.data as { holder: string }).holder : undefined), undefined);
  if (!holder) return undefined;
  for (let attempt = 0; attempt < 50; attempt++) {
    const [saved] = await deps.store.readStream(componentStream(holder), { maxCount: 1 });
    if (saved) {
      if ((saved.data as { codeHash?: string }).codeHash === codeHash) return holder;
      throw new CommandRejected("name_taken", `${name} is already published with different code: publish a new version`, 409);
    }
    // The claim is written just before the component: give its publisher a moment.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new CommandRejected("name_taken", `${name} is claimed but its component never appeared`, 409);
}
