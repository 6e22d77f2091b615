// Group commit for the embedded bus: publishes and offset commits queued while the previous group
// is being written (or in the same event-loop turn) go to the writer thread as one group, one
// transaction, one fsync.
import { GroupedWrites, type Outcome } from "../../groupedWrites.js";
import { decodePlainError, WriterThread } from "../../sqliteWriter/thread.js";
import { BusClosedError } from "../bus.js";
import type { Appended, LogWrite, LogWriteOutcome } from "./logWriter.js";

export class WriteBatch {
  readonly #thread: WriterThread<readonly LogWrite[]>;
  readonly #writes: GroupedWrites<LogWrite, unknown>;

  constructor(file: string) {
    this.#thread = new WriterThread(new URL("./logWriterThread.js", import.meta.url), { file });
    this.#writes = new GroupedWrites<LogWrite, unknown>(
      async (group) => {
        const outcomes = (await this.#thread.request(group)) as LogWriteOutcome[];
        return outcomes.map((outcome): Outcome<unknown> =>
          "error" in outcome ? { error: decodePlainError(outcome.error) } : { result: outcome.value },
        );
      },
      undefined,
      undefined,
      () => new BusClosedError(),
    );
  }

  append(write: Extract<LogWrite, { op: "append" }>): Promise<Appended[]> {
    return this.#writes.add(write) as Promise<Appended[]>;
  }

  commit(write: Extract<LogWrite, { op: "commit" }>): Promise<void> {
    return this.#writes.add(write) as Promise<void>;
  }

  /** Writes what is queued, then ends the writer thread. */
  async close(): Promise<void> {
    await this.#writes.close();
    await this.#thread.close();
  }
}
