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

/**
 * The event loop's side of one writer thread. A thread that dies (a crash, not `close`) fails the
 * requests waiting on it (their writes may or may not have committed; callers' appends are
 * idempotent by id) and is started again by the next request.
 */
export class WriterThread<Request extends object> {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  private nextId = 0;
  private closing = false;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly entry: URL,
    private readonly workerData: unknown,
    private readonly decodeError: (encoded: EncodedError) => Error = decodePlainError,
    /** What the thread is, in its errors' messages. */
    private readonly label = "SQLite writer thread",
  ) {
    this.worker = this.start();
  }

  request(request: Request): Promise<unknown> {
    if (this.closing) return Promise.reject(new Error(`the ${this.label} is closed`));
    const worker = (this.worker ??= this.start());
    return this.post(worker, { request });
  }

  /** Closes the write connection after what was posted, then ends the thread. */
  async close(): Promise<void> {
    this.closing = true;
    const worker = this.worker;
    if (worker === undefined) return;
    // Held until the thread has ended, so closing is awaited to the end.
    worker.ref();
    await this.post(worker, { close: true }).catch(() => undefined);
    await this.exited;
  }

  private start(): Worker {
    const worker = new Worker(this.entry, { workerData: this.workerData });
    worker.unref();
    worker.on("message", (answer: Answer) => {
      const waiter = this.waiting.get(answer.id);
      if (waiter === undefined) return;
      this.forget(answer.id);
      if (answer.failed !== undefined) waiter.reject(this.decodeError(answer.failed));
      else waiter.resolve(answer.value);
    });
    worker.on("error", (error) => this.lost(worker, error));
    this.exited = new Promise((resolve) =>
      worker.once("exit", (code) => {
        this.lost(worker, new Error(`a ${this.label} exited (code ${code})`));
        resolve();
      }),
    );
    return worker;
  }

  private post(worker: Worker, message: { request?: Request; close?: true }): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  }

  private forget(id: number): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0 && !this.closing) this.worker?.unref();
  }

  /** The thread is gone: what waited on it fails, and the next request starts a new one. */
  private lost(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    for (const [id, waiter] of this.waiting) {
      this.waiting.delete(id);
      waiter.reject(error);
    }
  }
}
