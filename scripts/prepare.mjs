// npm's `prepare` (run by `npm install` and `npm ci` in a checkout): build dist/ so `npx headwater`
// works right after an install. Skipped where there is nothing to build with: an install before the
// sources are copied (the Dockerfile's first layer), or without the dev dependencies (no tsc).
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
if (!fs.existsSync(path.join(root, "tsconfig.json")) || !fs.existsSync(path.join(root, "src"))) {
  console.log("prepare: no sources here yet, not building");
  process.exit(0);
}
try {
  createRequire(path.join(root, "package.json")).resolve("typescript");
} catch {
  console.log("prepare: typescript is not installed (production install?), not building: run npm run build");
  process.exit(0);
}
const npm = process.env.npm_execpath;
const result = npm
  ? spawnSync(process.execPath, [npm, "run", "build"], { cwd: root, stdio: "inherit" })
  : spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit", shell: process.platform === "win32" });
process.exit(result.status ?? 1);
