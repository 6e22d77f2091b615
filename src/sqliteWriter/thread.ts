// A SQLite file's writes on a thread of their own. better-sqlite3 is synchronous, so a commit
// (and its fsync, which is most of it) run on the event loop would stop everything else for its
// whole duration; the writer thread owns the file's one write connection, and the event loop only
// posts the work and waits for "durable". Reads stay on the event loop's own connection (WAL lets
// them run beside the writer and see every commit that was answered).
//
// This is the event loop's side: requests go in order, answers are matched by id, and the thread
// keeps the process alive only while a request is waiting on it.
import { Worker } from "node:worker_threads";

/** An error as it crosses threads; `fields` carries what a typed error needs to be rebuilt. */
export interface EncodedError {
  readonly name: string;
  readonly message: string;
  readonly fields?: Record<string, unknown>;
}

interface Answer {
  readonly id: number;
  readonly value?: unknown;
  readonly failed?: EncodedError;
}

/** Rebuilds a plain error (name, message and a string `code` such as SQLITE_FULL). */
export function decodePlainError(encoded: EncodedError): Error {
  const error =
    encoded.name === "TypeError"
      ? new TypeError(encoded.message)
      : encoded.name === "RangeError"
        ? new RangeError(encoded.message)
        : new Error(encoded.message);
  if (error.name !== encoded.name) error.name = encoded.name;
  const code = encoded.fields?.code;
  if (typeof code === "string") (error as Error & { code: string }).code = code;
  return error;
}

export class WriterThread<Request extends object> {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  private nextId = 0;
  private closing = false;
  private dead: Error | undefined;
  private readonly exited: Promise<void>;

  constructor(
    entry: URL,
    workerData: unknown,
    private readonly decodeError: (encoded: EncodedError) => Error = decodePlainError,
  ) {
    this.worker = new Worker(entry, { workerData });
    this.worker.unref();
    this.worker.on("message", (answer: Answer) => {
      const waiter = this.waiting.get(answer.id);
      if (waiter === undefined) return;
      this.forget(answer.id);
      if (answer.failed !== undefined) waiter.reject(this.decodeError(answer.failed));
      else waiter.resolve(answer.value);
    });
    this.worker.on("error", (error) => this.fail(error));
    this.exited = new Promise((resolve) => this.worker.once("exit", () => resolve()));
    void this.exited.then(() => this.fail(new Error("a SQLite writer thread exited")));
  }

  request(request: Request): Promise<unknown> {
    if (this.dead !== undefined) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id, request });
    });
  }

  /** Closes the write connection after what was posted, then ends the thread. */
  async close(): Promise<void> {
    // Held until the thread has ended, so closing is awaited to the end.
    this.closing = true;
    this.worker.ref();
    if (this.dead === undefined) {
      const id = this.nextId++;
      await new Promise((resolve, reject) => {
        this.waiting.set(id, { resolve, reject });
        this.worker.postMessage({ id, close: true });
      });
    }
    await this.exited;
  }

  private forget(id: number): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0 && !this.closing) this.worker.unref();
  }

  private fail(error: Error): void {
    this.dead ??= error;
    for (const [id, waiter] of this.waiting) {
      this.forget(id);
      waiter.reject(error);
    }
  }
}
