// A node's log and read models in a temporary directory: a real SQLite log, a real read-model file
// and the real projector following the log, for tests of what is built on the projector.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openEventStore } from "../../src/store/open.js";
import type { EventStore } from "../../src/store/eventStore.js";
import { openReadModels } from "../../src/readModels/database.js";
import { Projector } from "../../src/projector/projector.js";
import { allProjections } from "../../projections/index.js";

export interface ProjectedStore {
  readonly store: EventStore;
  readonly db: ReturnType<typeof openReadModels>;
  readonly projector: Projector;
  /** Appends to a stream and waits until the read models include it. */
  append(stream: string, events: { type: string; data: unknown }[]): Promise<void>;
  /** Stops the projector, closes both files and removes the directory. */
  close(): Promise<void>;
}

export async function openProjectedStore(prefix: string): Promise<ProjectedStore> {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const store = await openEventStore(path.join(dir, "events.db"));
  const db = openReadModels(path.join(dir, "readmodels.db"));
  const projector = new Projector(store, db, allProjections);
  projector.start();
  return {
    store,
    db,
    projector,
    async append(stream, events) {
      const result = await store.append(stream, events);
      await projector.waitFor(result.position);
    },
    async close() {
      await projector.stop();
      db.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
