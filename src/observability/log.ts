// The server's one logger: JSON lines (pino) on stdout, pretty when stdout is a terminal. The
// level comes from HEADWATER_LOG_LEVEL (setLogLevel at start); modules log through `log` or a child.
import { createRequire } from "node:module";
import { pino, type Logger, type LevelWithSilent } from "pino";

export type { Logger };

function destination(): pino.DestinationStream {
  if (!process.stdout.isTTY) return pino.destination({ dest: 1, sync: true });
  // Loaded only on a terminal: a log collector reads the JSON lines instead.
  const pretty = createRequire(import.meta.url)("pino-pretty") as (options: Record<string, unknown>) => pino.DestinationStream;
  return pretty({ colorize: true, destination: 1, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" });
}

export const log: Logger = pino(
  {
    level: "info",
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Bearer keys and stream tokens never reach a log line, whatever a caller logs.
    redact: {
      paths: ["authorization", "*.authorization", "headers.authorization", "stream_token", "*.stream_token"],
      censor: "[redacted]",
    },
    serializers: { err: pino.stdSerializers.err },
  },
  destination(),
);

export function setLogLevel(level: LevelWithSilent): void {
  log.level = level;
}
