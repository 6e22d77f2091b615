import type { Database, Transaction } from "better-sqlite3";

interface Queued {
  readonly work: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Group commit for the embedded bus: writes queued in one event-loop turn share one transaction,
 * so one fsync, each in its own savepoint so one failing write does not undo the others.
 */
export class WriteBatch {
  #queue: Queued[] = [];
  #scheduled = false;
  readonly #commit: Transaction<(queue: Queued[]) => void>;

  constructor(db: Database) {
    const single = (work: () => unknown) => db.transaction(work)();
    this.#commit = db.transaction((queue: Queued[]) => {
      for (const queued of queue) {
        try {
          queued.resolve(single(queued.work));
        } catch (error) {
          queued.reject(error);
        }
      }
    });
  }

  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => this.flush());
    });
  }

  /** Commits what is queued now (also used before closing the file). */
  flush(): void {
    this.#scheduled = false;
    const queue = this.#queue;
    this.#queue = [];
    if (queue.length === 0) return;
    try {
      this.#commit.immediate(queue);
    } catch (error) {
      for (const queued of queue) queued.reject(error);
    }
  }
}
