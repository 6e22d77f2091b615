import type { Bus } from "./bus.js";
import { openEmbeddedBus } from "./embedded/index.js";
import { openKafkaBus } from "./kafka/index.js";

/** Chooses the bus from HEADWATER_BUS: `embedded` (a SQLite log in the data directory) or `kafka://host:port[,host:port]`. */
export async function openBus(url: string, options: { file: string; clientId: string }): Promise<Bus> {
  if (url === "embedded") return openEmbeddedBus({ file: options.file });
  if (url.startsWith("kafka://")) {
    const brokers = url.slice("kafka://".length).split(",").map((b) => b.trim()).filter((b) => b !== "");
    if (brokers.length === 0) throw new Error(`HEADWATER_BUS "${url}" names no broker`);
    return openKafkaBus({ brokers, clientId: options.clientId });
  }
  throw new Error(`HEADWATER_BUS must be "embedded" or kafka://host:port, got "${url}"`);
}
