// How every CLI failure ends the process: one error on stderr (a JSON {"error","code"} document, or
// one human line) and an exit status that says what kind of failure it was.
import { CommanderError } from "commander";
import { DomainError } from "../../commands/decider.js";
import { DataDirLockedError } from "../dataDir.js";
import { toDomainError } from "../errors.js";

/** Exit statuses of every command (README "Command line"). */
export const EXIT = {
  ok: 0,
  /** the server reported a failure, a run failed, or something unexpected happened */
  failure: 1,
  /** a bad option, a missing argument, a value that does not parse */
  usage: 2,
  /** no profile or API key, or the server refused the key */
  auth: 3,
  /** the source, component or route does not exist */
  notFound: 4,
  /** the server cannot be reached */
  unreachable: 5,
} as const;

/** The exit status an error code means. */
export function exitCodeOf(code: string): number {
  switch (code) {
    case "usage":
      return EXIT.usage;
    case "unauthorized":
      return EXIT.auth;
    case "not_found":
      return EXIT.notFound;
    case "unavailable":
      return EXIT.unreachable;
    default:
      return EXIT.failure;
  }
}

/**
 * A failure the CLI reports: `code` is one of commands/errors.ts (or what the server answered: a
 * newer server may know more codes); a server that cannot be reached is `unavailable`.
 */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly exitCode: number;
  constructor(
    readonly code: string,
    message: string,
    exitCode?: number,
  ) {
    super(message);
    this.exitCode = exitCode ?? exitCodeOf(code);
  }
}

export const usage = (message: string) => new CliError("usage", message);

/** Whatever was thrown, as a CliError (commander's parse errors become `usage`). */
export function asCliError(error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof CommanderError) {
    const message = error.message.replace(/^error:\s*/, "").trim();
    return new CliError("usage", message === "(outputHelp)" ? "a subcommand is required (see --help)" : message, EXIT.usage);
  }
  if (error instanceof DataDirLockedError) return new CliError("data_dir_locked", error.message);
  if (error instanceof DomainError) return new CliError(error.code, error.message);
  const known = toDomainError(error);
  // An error we do not know still says what happened: the person is at the console.
  if (known.code === "internal") return new CliError("internal", error instanceof Error ? error.message : String(error));
  return new CliError(known.code, known.message);
}

/** Prints the failure (JSON on stderr, or one line) and exits with its status. */
export function exitWith(error: unknown, json: boolean, colorRed: (s: string) => string = (s) => s): never {
  const failure = asCliError(error);
  const message = failure.message.replace(/\s*\n\s*/g, " ");
  if (json) process.stderr.write(`${JSON.stringify({ error: message, code: failure.code })}\n`);
  else process.stderr.write(`${colorRed("error:")} ${message}\n`);
  process.exit(failure.exitCode);
}
