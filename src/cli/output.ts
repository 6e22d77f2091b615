import { CommandRejected } from "../../commands/decider.js";
import { DataDirLockedError } from "../dataDir.js";

/** Operator commands print exactly one JSON document on stdout; failures print one on stderr. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function failWith(error: unknown): never {
  const body =
    error instanceof CommandRejected ? { error: error.message, code: error.code }
    : error instanceof DataDirLockedError ? { error: error.message, code: "data_dir_locked" }
    : { error: error instanceof Error ? error.message : String(error), code: "failed" };
  process.stderr.write(`${JSON.stringify(body)}\n`);
  process.exit(1);
}
