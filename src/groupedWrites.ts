// Group commit, whatever is being written: items submitted in the same event-loop turn, or while
// the previous group is still being written, go into one write (one transaction, one fsync). One
// group is written at a time; each item still succeeds or fails on its own.

/** What became of one item of a group. */
export type Outcome<Result> = { readonly result: Result } | { readonly error: unknown };

/** Writes a group; throws only when the whole group failed (then every item fails with that error). */
export type WriteGroup<Item, Result> = (group: readonly Item[]) => readonly Outcome<Result>[] | Promise<readonly Outcome<Result>[]>;

/** Thrown by `add` once the writer is closed. */
export class GroupedWritesClosedError extends Error {}

interface Waiting<Item, Result> {
  readonly item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

export class GroupedWrites<Item, Result> {
  private queue: Waiting<Item, Result>[] = [];
  private scheduled = false;
  private writing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly writeGroup: WriteGroup<Item, Result>,
    /** Called after a group in which at least one item was written, before the items resolve. */
    private readonly onWritten: () => void = () => {},
    /** Caps a group so one write never holds the writer for long. */
    private readonly maxGroupSize = 1000,
    private readonly closedError: () => Error = () => new GroupedWritesClosedError("closed"),
  ) {}

  add(item: Item): Promise<Result> {
    if (this.closed) return Promise.reject(this.closedError());
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Writes what is queued, then refuses new items. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.writing !== undefined || this.queue.length > 0) {
      await (this.writing ?? this.flush());
    }
  }

  private schedule(): void {
    if (this.scheduled || this.writing !== undefined) return;
    this.scheduled = true;
    // setImmediate (not a microtask) so items from every I/O callback of this turn join the group.
    setImmediate(() => {
      this.scheduled = false;
      if (this.writing === undefined) void this.flush();
    });
  }

  private flush(): Promise<void> {
    const group = this.queue.splice(0, this.maxGroupSize);
    if (group.length === 0) return Promise.resolve();
    const writing = this.write(group).finally(() => {
      this.writing = undefined;
      if (this.queue.length > 0) this.schedule();
    });
    this.writing = writing;
    return writing;
  }

  private async write(group: readonly Waiting<Item, Result>[]): Promise<void> {
    let outcomes: readonly Outcome<Result>[];
    try {
      outcomes = await this.writeGroup(group.map((waiting) => waiting.item));
    } catch (error) {
      for (const waiting of group) waiting.reject(error);
      return;
    }
    if (outcomes.some((outcome) => "result" in outcome)) this.onWritten();
    group.forEach((waiting, index) => {
      const outcome = outcomes[index];
      if ("result" in outcome) waiting.resolve(outcome.result);
      else waiting.reject(outcome.error);
    });
  }
}
