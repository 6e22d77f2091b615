import fs from "node:fs";
import type { Command } from "commander";
import { openEventStore } from "../store/open.js";
import { loadConfig } from "../config.js";
import { openReadModels } from "../readModels/database.js";
import { rebuildProjections } from "../projector/projector.js";
import { allProjections } from "../../projections/index.js";
import { readModelsFile } from "../node.js";
import { runningServerPid } from "../dataDir.js";
import { failWith, printJson } from "./output.js";

export function projectionsCommands(program: Command): void {
  const projections = program.command("projections").description("read models");
  projections
    .command("rebuild")
    .description("drop every read model of this data directory and rebuild it from the log")
    .action(async () => {
      const config = loadConfig();
      const pid = runningServerPid(config.dataDir);
      if (pid !== undefined) failWith(new Error(`a server (pid ${pid}) is using ${config.dataDir}: stop it first`));
      fs.mkdirSync(config.dataDir, { recursive: true });
      const store = await openEventStore(config.eventStore);
      const db = openReadModels(readModelsFile(config));
      const started = Date.now();
      try {
        const position = await rebuildProjections(store, db, allProjections);
        printJson({ rebuilt: allProjections.map((p) => p.name), position, ms: Date.now() - started });
      } finally {
        db.close();
        await store.close();
      }
    });
}
