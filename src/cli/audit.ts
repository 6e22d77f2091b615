import type { Command } from "commander";
import { operatorModules } from "./operatorModules.js";
import { loadConfig } from "../config.js";
import { announceNewDataDir, failWith, printJson } from "./output.js";

import { historyStreams } from "../../commands/streams.js";
import { DomainError } from "../../commands/decider.js";

export function auditCommand(program: Command): void {
  program
    .command("audit <resourceId>")
    .description("print a resource's whole history, event by event, from its stream")
    .action(async (resourceId: string) => {
      const stream = historyStreams(resourceId)?.[0];
      if (!stream) failWith(new DomainError("usage", `"${resourceId}" is not a resource id (u_, o_, k_, sc_, dc_, wh_, p_, sub_, apn_)`));
      const config = loadConfig();
      announceNewDataDir(config);
      const store = await (await operatorModules()).openEventStore(config.eventStore);
      try {
        const events = await store.readStream(stream);
        if (events.length === 0) failWith(new DomainError("not_found", `no history for ${resourceId}`));
        printJson({
          resource_id: resourceId,
          stream,
          events: events.map((e) => ({
            revision: e.revision,
            position: e.position,
            id: e.id,
            type: e.type,
            created: new Date(e.created).toISOString(),
            data: e.data,
            metadata: e.metadata,
          })),
        });
      } finally {
        await store.close();
      }
    });
}
