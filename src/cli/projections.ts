import type { Command } from "commander";
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
      const { DataDirLock, openEventStore, openReadModels, readModelsFile, rebuildProjections, allProjections } = await operatorModules();
      // A running node holds the directory: rebuilding its read models under it would corrupt them.
      let lock: DataDirLock;
      try {
        lock = DataDirLock.acquire(config.dataDir);
      } catch (error) {
        failWith(error);
      }
      const store = await openEventStore(config.eventStore);
      const db = openReadModels(readModelsFile(config));
      const started = Date.now();
      try {
        const position = await rebuildProjections(store, db, allProjections, {
          onProgress: (at, head) => process.stderr.write(`headwater: rebuilding, at position ${at} of ${head}\n`),
        });
        // Closing copies the rest of the WAL back into the file: part of the rebuild's time.
        db.close();
        printJson({ rebuilt: allProjections.map((p) => p.name), position, ms: Date.now() - started });
      } finally {
        if (db.open) db.close();
        await store.close();
        lock.release();
      }
    });
}
