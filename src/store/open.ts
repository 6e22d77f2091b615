import type { EventStore } from "./eventStore.js";
import { openSqliteEventStore } from "./sqlite/sqliteEventStore.js";

/** Chooses the event store adapter from HEADWATER_EVENT_STORE: `sqlite:<path>` or a bare path. */
export async function openEventStore(url: string): Promise<EventStore> {
  if (url.startsWith("sqlite:")) return openSqliteEventStore({ file: url.slice("sqlite:".length) });
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return openSqliteEventStore({ file: url });
  throw new Error(`unsupported event store "${url}"`);
}
