import { GroupedWrites } from "../groupedWrites.js";
import { EventStoreClosedError } from "./eventStoreClosedError.js";

/** Drop a stream's events before a revision (retention). */
export interface Truncation {
  readonly stream: string;
  readonly beforeRevision: number;
}

/**
 * Truncations asked for in one event-loop turn (a retention sweep asks for one per full stream),
 * or while the group before is written, go to the store as one write: one transaction, not one
 * commit (and fsync) each queued ahead of the appends.
 */
export const groupedTruncations = (write: (truncations: readonly Truncation[]) => Promise<unknown>) =>
  new GroupedWrites<Truncation, void>(
    async (truncations) => {
      await write(truncations);
      return truncations.map(() => ({ result: undefined }));
    },
    undefined,
    undefined,
    () => new EventStoreClosedError(),
  );
