import type { Database } from "better-sqlite3";
import { WriterThread } from "../sqliteWriter/thread.js";
import { log } from "../observability/log.js";

/** How long committed frames wait, at most, before they are copied back: ~1,500 frames under load. */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * The read models' checkpoints, off the event loop. SQLite checkpoints a WAL on the connection
 * whose commit crosses 1,000 frames, and here that is the event loop's: every few hundred
 * projector commits one of them also copied ~4 MB of pages back into the file and synced it.
 * With the automatic checkpoint off, a thread with a connection of its own checkpoints (PASSIVE:
 * it waits for nobody) at most every CHECKPOINT_INTERVAL_MS while commits come in, and not at
 * all while none do. A checkpoint that fails is logged and tried again after the next commit
 * (the WAL meanwhile only grows), and closing the event loop's connection checkpoints what is
 * left, as before.
 */
export class ReadModelCheckpoints {
  readonly #thread: WriterThread<{ readonly checkpoint: true }>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lastStartedMs = -Infinity;
  #closed = false;
  #dirty = false;

  readonly #autocheckpoint: number;

  /** `db` is a file's connection (`db.name`) in WAL mode, as `openReadModels` opens it. */
  constructor(
    private readonly db: Database,
    private readonly intervalMs = CHECKPOINT_INTERVAL_MS,
  ) {
    this.#autocheckpoint = db.pragma("wal_autocheckpoint", { simple: true }) as number;
    db.pragma("wal_autocheckpoint = 0");
    this.#thread = new WriterThread(new URL("./checkpointThread.js", import.meta.url), { file: db.name });
  }

  /** Something was committed: it is copied back within the interval. */
  committed(): void {
    this.#dirty = true;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed || this.#timer !== undefined || this.#running !== undefined) return;
    const waitMs = Math.max(0, this.#lastStartedMs + this.intervalMs - performance.now());
    this.#timer = setTimeout(() => this.#checkpoint(), waitMs);
    this.#timer.unref();
  }

  #checkpoint(): void {
    this.#timer = undefined;
    this.#dirty = false;
    this.#lastStartedMs = performance.now();
    this.#running = this.#thread
      .request({ checkpoint: true })
      .then(
        () => undefined,
        (error: unknown) => log.warn({ err: error }, "read models: a checkpoint failed; it is tried again after the next commit"),
      )
      .finally(() => {
        this.#running = undefined;
        // Commits made while it ran (their frames may be past what it copied).
        if (this.#dirty) this.#schedule();
      });
  }

  /**
   * Ends the thread (after a checkpoint under way) and gives the connection its automatic
   * checkpoint back; closing the connection checkpoints what is left, as before.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
    await this.#thread.close();
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${this.#autocheckpoint}`);
  }
}
