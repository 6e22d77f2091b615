#!/usr/bin/env -S node --no-node-snapshot
// The flag above is needed by isolated-vm on Node 20 (the runner lives in this process tree).
import fs from "node:fs";

const entry = new URL("../dist/src/cli/main.js", import.meta.url);
if (!fs.existsSync(entry)) {
  process.stderr.write(
    "headwater: the compiled CLI (dist/) is missing. Build it with `npm run build` in " +
      `${new URL("..", import.meta.url).pathname} (npm install and npm ci build it through the prepare script).\n`,
  );
  process.exit(1);
}
await import(entry.href);
