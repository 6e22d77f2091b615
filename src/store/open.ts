import { openEsdbEventStore } from "./esdb/esdbEventStore.js";
import type { EventStore } from "./eventStore.js";
import { openPostgresEventStore } from "./postgres/postgresEventStore.js";
import { openSqliteEventStore } from "./sqlite/sqliteEventStore.js";

export class UnsupportedEventStoreUrlError extends Error {
  override readonly name = "UnsupportedEventStoreUrlError";
  constructor(readonly url: string) {
    super(`no event store adapter for ${JSON.stringify(url)}: use sqlite:<path>, a file path, postgres://…, or kurrentdb://… (esdb://…)`);
  }
}

const esdbSchemes = /^(esdb|kurrentdb|kurrent|kdb)(\+discover)?:\/\//i;

/**
 * The adapter a URL names:
 * - `sqlite:<path>` or a bare file path (the embedded default),
 * - `postgres://…` / `postgresql://…`, with an optional `?schema=name` (default "headwater"),
 * - `kurrentdb://…` / `esdb://…` (and the other KurrentDB client schemes).
 */
export async function openEventStore(url: string): Promise<EventStore> {
  if (/^sqlite:/i.test(url)) {
    // sqlite:///abs/path and sqlite:relative/path both name a file.
    const file = url.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (file === "") throw new UnsupportedEventStoreUrlError(url);
    return openSqliteEventStore({ file });
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get("schema") ?? undefined;
    // pg would pass an unknown parameter on to the server as a setting.
    parsed.searchParams.delete("schema");
    return openPostgresEventStore({ connectionString: parsed.toString(), ...(schema === undefined ? {} : { schema }) });
  }
  if (esdbSchemes.test(url)) {
    // The client still accepts esdb:// but warns on every connect.
    return openEsdbEventStore({ connectionString: url.replace(/^esdb/i, "kurrentdb") });
  }
  // Anything without a scheme is a path; one-letter "schemes" are Windows drive letters.
  if (!/^[a-z][a-z0-9+.-]+:/i.test(url) && url !== "") return openSqliteEventStore({ file: url });
  throw new UnsupportedEventStoreUrlError(url);
}
