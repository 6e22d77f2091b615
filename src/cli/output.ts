import { DomainError } from "../../commands/decider.js";
import { DataDirLockedError } from "../dataDir.js";
import { toDomainError } from "../errors.js";

/** Operator commands print exactly one JSON document on stdout; failures print one on stderr. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function failWith(error: unknown): never {
  const known = error instanceof DataDirLockedError ? new DomainError("data_dir_locked", error.message) : toDomainError(error);
  // An error we do not know still says what happened: the operator is at the console.
  const body =
    known.code === "internal"
      ? { error: error instanceof Error ? error.message : String(error), code: known.code }
      : { error: known.message, code: known.code };
  process.stderr.write(`${JSON.stringify(body)}\n`);
  process.exit(1);
}
