import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { openEventStore } from "./store/open.js";
import type { EventStore } from "./store/eventStore.js";
import { openReadModels } from "./readModels/database.js";
import { Projector } from "./projector/projector.js";
import { allProjections } from "../projections/index.js";
import { AccountsReadModel } from "./readModels/accounts.js";
import { UsageReadModel } from "./readModels/usage.js";
import { createUserAccount } from "./accounts/accounts.js";
import { CommandRejected } from "../commands/decider.js";
import { systemClock, type Clock } from "./ids.js";
import { createApp } from "./api/app.js";
import type { Services } from "./api/services.js";
import type { Config } from "./config.js";
import { writePidFile, removePidFile } from "./dataDir.js";

export interface RunningNode {
  readonly url: string;
  readonly bootstrapKey: string | undefined;
  close(): Promise<void>;
}

export const VERSION = "0.1.0";
const READ_MODELS_FILE = "readmodels.db";
export const readModelsFile = (config: Config) => path.join(config.dataDir, READ_MODELS_FILE);

/** On an empty log, creates the operator account so a fresh install can be used at once. */
async function bootstrap(store: EventStore, config: Config, clock: Clock): Promise<string | undefined> {
  if ((await store.headPosition()) !== 0) return undefined;
  try {
    const created = await createUserAccount(
      { store, clock, metadata: { by: "bootstrap" } },
      { username: config.bootstrapUsername, email: config.bootstrapEmail, plan: "paid", operator: true, apiKey: config.bootstrapKey },
    );
    return created.apiKey;
  } catch (error) {
    // Another node sharing the store bootstrapped first.
    if (error instanceof CommandRejected && (error.code === "name_taken" || error.code === "key_exists")) return undefined;
    throw error;
  }
}

export async function startNode(config: Config, clock: Clock = systemClock): Promise<RunningNode> {
  fs.mkdirSync(config.dataDir, { recursive: true });
  const store = await openEventStore(config.eventStore);
  const db = openReadModels(readModelsFile(config));
  const projector = new Projector(store, db, allProjections);
  projector.start();
  await projector.catchUp(10 * 60_000);
  const bootstrapKey = await bootstrap(store, config, clock);

  let publicUrl = config.publicUrl ?? "";
  const services: Services = {
    config,
    store,
    projector,
    db,
    accounts: new AccountsReadModel(db),
    usage: new UsageReadModel(db),
    clock,
    async written(write) {
      const result = await write;
      if (result.position !== undefined) await projector.waitFor(result.position);
      return result;
    },
  };
  const app = createApp(services, { version: VERSION, publicUrl: () => publicUrl });
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  if (!config.publicUrl) publicUrl = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
  writePidFile(config.dataDir);

  return {
    url: publicUrl,
    bootstrapKey,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await projector.stop();
      db.close();
      await store.close();
      removePidFile(config.dataDir);
    },
  };
}
