import fs from "node:fs";
import Database from "better-sqlite3";
import type { Config } from "../config.js";
import { readModelsFile } from "../node.js";
import { dataDirInUse } from "../dataDir.js";

/**
 * Read-your-writes for the operator: a server on the same data directory projects the CLI's
 * append within moments; wait until its checkpoints pass the append, so the caller can use the
 * result (a new key, a membership) the moment the command returns.
 */
export async function waitForLocalServer(config: Config, position: number, timeoutMs = 10_000): Promise<void> {
  const file = readModelsFile(config);
  if (!fs.existsSync(file) || !dataDirInUse(config.dataDir)) return;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const lowest = db.prepare<[], { position: number | null }>("SELECT MIN(position) AS position FROM projection_checkpoints");
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((lowest.get()?.position ?? 0) >= position) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    process.stderr.write(`warning: the running server had not caught up with position ${position} after ${timeoutMs} ms\n`);
  } finally {
    db.close();
  }
}
