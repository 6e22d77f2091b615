import type { EventStore } from "../../src/store/eventStore.js";
import { decideAndAppend, type HandleOptions } from "../handler.js";
import { streams } from "../streams.js";
import type { RunLogged } from "./runLog.js";

/** Run logs are append-only (no state to decide on): each goes to its emitter's log stream at any revision. */
export class RunLogStore {
  constructor(private readonly store: EventStore) {}

  async append(logged: RunLogged, options: HandleOptions = {}): Promise<number | undefined> {
    const appended = await decideAndAppend(
      this.store,
      async () => undefined,
      () => ({ stream: streams.runLogs(logged.data.sourceId), events: [logged], expectedRevision: "any" }),
      options,
    );
    return appended.position;
  }

  /** The logs of a batch of one source's runs, in one append. */
  async appendMany(logged: readonly RunLogged[], options: HandleOptions = {}): Promise<number | undefined> {
    if (logged.length === 0) return undefined;
    const appended = await decideAndAppend(
      this.store,
      async () => undefined,
      () => ({ stream: streams.runLogs(logged[0].data.sourceId), events: logged, expectedRevision: "any" }),
      options,
    );
    return appended.position;
  }
}
