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
        const { position } = await rebuildReadModelsFile(store, readModelsFile(config), allProjections, {
          onProgress: (at, head) => process.stderr.write(`headwater: rebuilding, at position ${at} of ${head}\n`),
        });
        printJson({ rebuilt: allProjections.map((p) => p.name), position, ms: Date.now() - started });
      } finally {
        await store.close();
        lock.release();
      }
    });
}
