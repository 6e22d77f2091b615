import type { AppendOptions, AppendResult, ExpectedRevision, NewEvent } from "./eventStore.js";
import { validateExpectedRevision } from "./expectedRevision.js";
import { proposeEvents } from "./proposedEvent.js";
import { EventStoreClosedError } from "./eventStoreClosedError.js";
import type { ProposedEvent } from "./proposedEvent.js";
import { GroupedWrites, type Outcome } from "../groupedWrites.js";

/** One append waiting for the next group commit. */
export interface PendingAppend {
  readonly stream: string;
  readonly events: readonly ProposedEvent[];
  readonly expectedRevision: ExpectedRevision;
}

/** Each append of a group succeeds or fails on its own. */
export type AppendOutcome = Outcome<AppendResult>;

/** Commits a group in one transaction; throws only when the whole transaction failed. */
export type CommitGroup = (group: readonly PendingAppend[]) => readonly AppendOutcome[] | Promise<readonly AppendOutcome[]>;

/**
 * Group commit of an event store: appends made in the same event-loop turn, or while the previous
 * group is still committing, go into one transaction and share its fsync. One group commits at a time.
 */
export class GroupCommit {
  private readonly writes: GroupedWrites<PendingAppend, AppendResult>;

  constructor(
    commitGroup: CommitGroup,
    onCommitted: () => void,
    /** Caps a transaction so one group never holds the writer for long. */
    maxGroupSize = 1000,
  ) {
    this.writes = new GroupedWrites(commitGroup, onCommitted, maxGroupSize, () => new EventStoreClosedError());
  }

  /** An adapter's `append`: checks the arguments, then queues the append for the next group. */
  submit(stream: string, events: readonly NewEvent[], options?: AppendOptions): Promise<AppendResult> {
    try {
      const expectedRevision = options?.expectedRevision ?? "any";
      validateExpectedRevision(expectedRevision);
      return this.append({ stream, events: proposeEvents(events), expectedRevision });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  append(append: PendingAppend): Promise<AppendResult> {
    return this.writes.add(append);
  }

  /** Commits what is queued, then refuses new appends. */
  close(): Promise<void> {
    return this.writes.close();
  }
}
