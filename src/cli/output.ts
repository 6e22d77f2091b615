import fs from "node:fs";
import path from "node:path";
import type { Config } from "../config.js";
import { asCliError, EXIT } from "./failure.js";

/** Operator commands print exactly one JSON document on stdout; failures print one on stderr. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** An operator failure: {"error","code"} on stderr; exit 2 for a usage error, else 1. */
export function failWith(error: unknown): never {
  const failure = asCliError(error);
  process.stderr.write(`${JSON.stringify({ error: failure.message, code: failure.code })}\n`);
  process.exit(failure.code === "usage" ? EXIT.usage : EXIT.failure);
}

/**
 * Says on stderr which data directory a command is about to create, so running from another
 * folder does not silently start an empty node (HEADWATER_DATA_DIR names the usual one).
 */
export function announceNewDataDir(config: Config, creates: "always" | "with-the-embedded-log" = "with-the-embedded-log"): void {
  if (fs.existsSync(config.dataDir)) return;
  // Commands that only open the log create the directory when the log is the embedded one in it.
  if (creates !== "always" && !config.eventStore.startsWith(`sqlite:${config.dataDir}${path.sep}`)) return;
  process.stderr.write(`headwater: creating a new data directory ${config.dataDir} (set HEADWATER_DATA_DIR to use another one)\n`);
}
