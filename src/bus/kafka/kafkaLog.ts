// Routes kafkajs's own log lines into the bus log. kafkajs reports recoverable conditions (a
// rebalance, a reconnect) at ERROR, so each level is lowered one step; consumer crashes and
// publish failures reach the caller through the bus itself.
import kafkajs from "kafkajs";
import type { BusLog, BusLogLevel } from "../bus.js";

const { logLevel } = kafkajs;

const lowered: Partial<Record<number, BusLogLevel>> = {
  [logLevel.ERROR]: "warn",
  [logLevel.WARN]: "info",
  [logLevel.INFO]: "debug",
};

export function kafkaLogCreator(log: BusLog): kafkajs.logCreator {
  return () =>
    ({ namespace, level, log: entry }) => {
      const mapped = lowered[level];
      if (!mapped) return;
      const { message, ...fields } = entry;
      log({ level: mapped, message: `kafkajs ${namespace}: ${message}`, fields });
    };
}
