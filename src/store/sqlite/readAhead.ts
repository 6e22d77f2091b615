import type { RecordedEvent } from "../eventStore.js";
import { WriterThread } from "../../sqliteWriter/thread.js";
import { recordedEventsOfJson } from "./eventRows.js";

/** One page as the read-ahead thread answers it. */
export interface ReadAheadPage {
  /** The position the page was read after. */
  readonly after: number;
  readonly count: number;
  /** Ended by PAGE_TEXT_BUDGET: the batch goes on in the next page. */
  readonly cut: boolean;
  /** Fewer rows than asked for, not cut: the head of the log when it was read. */
  readonly atHead: boolean;
  /** The rows (`rowsAsJson`). */
  readonly json: string;
}

/** What the thread is started with. */
export interface ReadAheadThreadData {
  readonly file: string;
  readonly fromPosition: number;
  readonly pageSize: number;
  /** Types whose events come with data null and metadata empty (SubscribeToAllOptions.leaveDataOf). */
  readonly leaveDataOf: readonly string[];
}

/** Pages asked for ahead of the one being applied: the thread reads the next while this one is. */
const DEPTH = 3;

/**
 * Most data and metadata text in one page (8 MB): a page of large events ends early and its batch
 * goes on in the next, so the pages read ahead hold at most a few times this.
 */
export const PAGE_TEXT_BUDGET = 8 * 1024 * 1024;

/**
 * A long catch-up read of $all (a rebuild, or a node starting far behind the log) with the log's
 * reading on a thread of its own: on one thread, stepping SQLite through the rows and making a
 * string of each column was ~40 % of a rebuild (bench/results/rebuild.md). The thread reads the
 * next pages while the event loop applies this one, and hands each over as one JSON text, so the
 * event loop's share of a row is one `JSON.parse` (which it did before too, per row).
 *
 * Pages come in order, each after the last; `next` must be called with the position the previous
 * page ended at (the caller's checkpoint), so a page can never be skipped or applied twice.
 */
export class ReadAhead {
  readonly #thread: WriterThread<Record<string, never>>;
  readonly #pages: Promise<unknown>[] = [];

  /** `leaveDataOf`: types whose events come with data null and metadata empty (SubscribeToAllOptions). */
  constructor(file: string, fromPosition: number, pageSize: number, leaveDataOf: ReadonlySet<string> = new Set()) {
    this.#thread = new WriterThread(
      new URL("./readAheadThread.js", import.meta.url),
      { file, fromPosition, pageSize, leaveDataOf: [...leaveDataOf] } satisfies ReadAheadThreadData,
      undefined,
      "event log read-ahead thread",
    );
    for (let i = 0; i < DEPTH; i++) this.#ask();
  }

  /**
   * The batch after `fromPosition`: the page size's events, fewer once the reader has reached
   * the head. Pages cut by their size are joined into the batch they belong to.
   */
  async next(fromPosition: number): Promise<RecordedEvent[]> {
    let batch: RecordedEvent[] | undefined;
    let after = fromPosition;
    for (;;) {
      const page = (await this.#pages.shift()) as ReadAheadPage;
      if (page.after !== after) throw new Error(`read-ahead page after ${page.after}, asked for one after ${after}`);
      if (!page.atHead) this.#ask();
      const events = recordedEventsOfJson(page.json);
      batch = batch === undefined ? events : batch.concat(events);
      if (!page.cut) return batch;
      after = events[events.length - 1].position;
    }
  }

  /** Ends the thread; pages asked for and not taken are dropped. */
  async close(): Promise<void> {
    for (const page of this.#pages.splice(0)) page.catch(() => undefined);
    await this.#thread.close();
  }

  #ask(): void {
    const page = this.#thread.request({});
    // Awaited by `next`, or dropped by `close`: never an unhandled rejection in between.
    page.catch(() => undefined);
    this.#pages.push(page);
  }
}
