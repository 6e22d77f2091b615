import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ComponentCatalog } from "./catalog.js";
import type { Projector } from "../projector/projector.js";

/** The registry/ folder of the repository: components we write and publish with every install. */
export const registryDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "registry");

/** Publishes every registry/ component not yet published (key@version is immutable, so this is idempotent). */
export async function publishRegistry(catalog: ComponentCatalog, projector: Projector, dir = registryDir): Promise<string[]> {
  if (!fs.existsSync(dir)) return [];
  const published: string[] = [];
  for (const file of fs.readdirSync(dir).filter((f) => /\.(m?js|ts)$/.test(f)).sort()) {
    const code = fs.readFileSync(path.join(dir, file), "utf8");
    const result = await catalog.publish(code, { by: "registry" });
    if (result.position !== undefined) await projector.waitFor(result.position);
    if (result.published) published.push(file);
  }
  return published;
}
