import type { AppendOptions, AppendResult, ExpectedRevision, NewEvent } from "./eventStore.js";
import { validateExpectedRevision } from "./expectedRevision.js";
import { proposeEvents } from "./proposedEvent.js";
import { EventStoreClosedError } from "./eventStoreClosedError.js";
import type { ProposedEvent } from "./proposedEvent.js";

/** One append waiting for the next group commit. */
export interface PendingAppend {
  readonly stream: string;
  readonly events: readonly ProposedEvent[];
  readonly expectedRevision: ExpectedRevision;
}

/** Each append of a group succeeds or fails on its own. */
export type AppendOutcome = { readonly result: AppendResult } | { readonly error: unknown };

/** Commits a group in one transaction; throws only when the whole transaction failed. */
export type CommitGroup = (group: readonly PendingAppend[]) => readonly AppendOutcome[] | Promise<readonly AppendOutcome[]>;

interface Waiting {
  readonly append: PendingAppend;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

/**
 * Group commit: appends made in the same event-loop turn, or while the previous group is still
 * committing, go into one transaction and share its fsync. One group commits at a time.
 */
export class GroupCommit {
  private queue: Waiting[] = [];
  private scheduled = false;
  private committing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly commitGroup: CommitGroup,
    private readonly onCommitted: () => void,
    /** Caps a transaction so one group never holds the writer for long. */
    private readonly maxGroupSize = 1000,
  ) {}

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
    if (this.closed) return Promise.reject(new EventStoreClosedError());
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ append, resolve, reject });
      this.schedule();
    });
  }

  /** Commits what is queued, then refuses new appends. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.committing !== undefined || this.queue.length > 0) {
      await (this.committing ?? this.flush());
    }
  }

  private schedule(): void {
    if (this.scheduled || this.committing !== undefined) return;
    this.scheduled = true;
    // setImmediate (not a microtask) so appends from every I/O callback of this turn join the group.
    setImmediate(() => {
      this.scheduled = false;
      if (this.committing === undefined) void this.flush();
    });
  }

  private flush(): Promise<void> {
    const group = this.queue.splice(0, this.maxGroupSize);
    if (group.length === 0) return Promise.resolve();
    const committing = this.commit(group).finally(() => {
      this.committing = undefined;
      if (this.queue.length > 0) this.schedule();
    });
    this.committing = committing;
    return committing;
  }

  private async commit(group: readonly Waiting[]): Promise<void> {
    let outcomes: readonly AppendOutcome[];
    try {
      outcomes = await this.commitGroup(group.map((waiting) => waiting.append));
    } catch (error) {
      for (const waiting of group) waiting.reject(error);
      return;
    }
    if (outcomes.some((outcome) => "result" in outcome)) this.onCommitted();
    group.forEach((waiting, index) => {
      const outcome = outcomes[index];
      if ("result" in outcome) waiting.resolve(outcome.result);
      else waiting.reject(outcome.error);
    });
  }
}
