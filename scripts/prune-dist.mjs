// Removes compiled files whose TypeScript source is gone (renamed or deleted), so a stale test or
// module in dist/ never runs. tsc's incremental build never deletes outputs by itself.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = path.join(root, "dist");

function walk(dir) {
  if (!fs.existsSync(dir)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") walk(full);
      continue;
    }
    const match = /^(.*)\.(js|js\.map|d\.ts)$/.exec(entry.name);
    if (!match) continue;
    const source = path.join(root, path.relative(dist, dir), `${match[1]}.ts`);
    if (!fs.existsSync(source)) fs.rmSync(full);
  }
}

walk(dist);
