import type { Command } from "commander";
import { openEventStore } from "../store/open.js";
import { loadConfig } from "../config.js";
import { failWith, printJson } from "./output.js";

// Resource id prefix -> the aggregate stream holding its history (see ARCHITECTURE.md, stream naming).
const streamPrefixes: Record<string, string> = {
  u: "user", o: "org", k: "apikey", sc: "component", dc: "source", wh: "webhook", p: "workflow", sub: "subscription",
};

export function streamOf(resourceId: string): string | undefined {
  const prefix = /^([a-z]+)_[0-9a-z]+$/.exec(resourceId)?.[1];
  const kind = prefix === undefined ? undefined : streamPrefixes[prefix];
  return kind && `${kind}-${resourceId}`;
}

export function auditCommand(program: Command): void {
  program
    .command("audit <resourceId>")
    .description("print a resource's whole history, event by event, from its stream")
    .action(async (resourceId: string) => {
      const stream = streamOf(resourceId);
      if (!stream) failWith(new Error(`"${resourceId}" is not a resource id (u_, o_, k_, sc_, dc_, wh_, p_, sub_)`));
      const store = await openEventStore(loadConfig().eventStore);
      try {
        const events = await store.readStream(stream);
        if (events.length === 0) failWith(new Error(`no history for ${resourceId}`));
        printJson({
          resource_id: resourceId,
          stream,
          events: events.map((e) => ({
            revision: e.revision, position: e.position, id: e.id, type: e.type,
            created: new Date(e.created).toISOString(), data: e.data, metadata: e.metadata,
          })),
        });
      } finally {
        await store.close();
      }
    });
}
