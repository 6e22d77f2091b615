import type { Bus, BusLog } from "./bus.js";
import { openEmbeddedBus } from "./embedded/index.js";
import { openKafkaBus } from "./kafka/index.js";
import { checkNamespace, namespacedBus } from "./namespace.js";

/**
 * Chooses the bus from HEADWATER_BUS: `embedded` (a SQLite log in the data directory) or
 * `kafka://host:port[,host:port][?namespace=name]`; the namespace prefixes every topic and group,
 * so several deployments can share one Kafka cluster.
 */
export async function openBus(url: string, options: { file: string; clientId: string; log?: BusLog }): Promise<Bus> {
  const log = options.log ? { log: options.log } : {};
  if (url === "embedded") return openEmbeddedBus({ file: options.file, ...log });
  if (url.startsWith("kafka://")) {
    const [list = "", query = ""] = url.slice("kafka://".length).split("?", 2);
    const params = new URLSearchParams(query);
    const unknown = [...params.keys()].filter((k) => k !== "namespace");
    if (unknown.length > 0) throw new Error(`HEADWATER_BUS "${url}": unknown parameter ${unknown.join(", ")} (only namespace)`);
    const brokers = list
      .split(",")
      .map((b) => b.trim().replace(/\/+$/, ""))
      .filter((b) => b !== "");
    if (brokers.length === 0) throw new Error(`HEADWATER_BUS "${url}" names no broker`);
    const namespace = params.has("namespace") ? checkNamespace(params.get("namespace")!) : undefined;
    const bus = await openKafkaBus({ brokers, clientId: options.clientId, ...log });
    return namespace ? namespacedBus(bus, namespace) : bus;
  }
  throw new Error(`HEADWATER_BUS must be "embedded" or kafka://host:port[?namespace=name], got "${url}"`);
}
