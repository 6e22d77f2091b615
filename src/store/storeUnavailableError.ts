/**
 * The log's server could not be reached, or went away mid-call (down, restarting, out of
 * connections): an append may or may not have been written. Callers answer "try again", not an
 * internal error.
 */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(`the event store is unavailable: ${message}`, options);
  }
}

/** Network failures (Node's errno codes) that mean the server was not there, not that the call was wrong. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/**
 * Whether a PostgreSQL client error says the server was unreachable or stopped serving: a network
 * failure, the connection ended under the call, a connection exception (SQLSTATE class 08), the
 * server shutting down or starting (57P01–57P03), or no connection slot left (53300).
 */
export function postgresUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (NETWORK_CODES.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300")
      return true;
  }
  // pg and pg-pool say these without a code.
  return /^Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect/i.test(error.message);
}

/** `error` as the store's callers should see it. */
export const fromPostgres = (error: unknown): unknown =>
  postgresUnreachable(error) ? new StoreUnavailableError((error as Error).message, { cause: error }) : error;
