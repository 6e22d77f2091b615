import type { Command } from "commander";
import { existsSync } from "node:fs";
import { loadConfig } from "../config.js";
import type { DataDirLock } from "../dataDir.js";
import { operatorModules } from "./operatorModules.js";
import { announceNewDataDir, failWith, printJson } from "./output.js";

export function projectionsCommands(program: Command): void {
  const projections = program.command("projections").description("read models");
  projections
    .command("rebuild")
    .description("drop every read model of this data directory and rebuild it from the log")
    .action(async () => {
      const config = loadConfig();
      announceNewDataDir(config, "always");
      const { DataDirLock, openEventStore, readModelsFile, rebuildReadModelsFile, allProjections } = await operatorModules();
      // A running node holds the directory: rebuilding its read models under it would corrupt them.
      let lock: DataDirLock;
      try {
        lock = DataDirLock.acquire(config.dataDir);
      } catch (error) {
        failWith(error);
      }
      const store = await openEventStore(config.eventStore);
      const started = Date.now();
      try {
        // Built beside the read models' file, which it replaces once complete and durable.
        const { position, parked } = await rebuildReadModelsFile(store, readModelsFile(config), allProjections, {
          onProgress: (at, head) => process.stderr.write(`headwater: rebuilding, at position ${at} of ${head}\n`),
        });
        if (parked > 0)
          process.stderr.write(
            `headwater: ${parked} event(s) could not be applied and were parked: headwater projections parked lists them\n`,
          );
        printJson({ rebuilt: allProjections.map((p) => p.name), position, parked, ms: Date.now() - started });
      } finally {
        await store.close();
        lock.release();
      }
    });
  projections
    .command("parked")
    .description("events a read model could not apply and set aside so the others went on (projection, position, type, error)")
    .action(async () => {
      const config = loadConfig();
      const { readModelsFile, parkedEvents } = await operatorModules();
      const file = readModelsFile(config);
      if (!existsSync(file)) {
        printJson([]);
        return;
      }
      // Read-only beside a running node: nothing is written, the node's WAL is read as it is.
      const { default: Database } = await import("better-sqlite3");
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        db.pragma("busy_timeout = 5000");
        printJson(parkedEvents(db));
      } finally {
        db.close();
      }
    });
}
