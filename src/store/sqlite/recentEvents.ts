import type { RecordedEvent } from "../eventStore.js";

/**
 * The events this store committed last, as $all subscriptions read them. A live tail (the
 * projector, the router) reads what was just committed; served from here, that is one JSON parse
 * per event at commit instead of a query and a parse per subscription.
 *
 * The window is exactly the log between `first` and `last`: own commits are added only when they
 * follow on from the last one (a gap is another process's commit, or a position SQLite skipped: the
 * window starts again), and truncated events leave the window as they leave the file. A read the
 * window cannot answer in full goes to the file.
 */
export class RecentEvents {
  #events: RecordedEvent[] = [];
  /** JSON text length of each event's data and metadata, beside #events. */
  #sizes: number[] = [];
  #bytes = 0;
  /** Positions covered: every event of the log in [first, last] is in #events. Empty when last < first. */
  #first = 1;
  #last = 0;

  constructor(
    private readonly maxEvents = 4096,
    /** Roughly, in JSON text of data and metadata. */
    private readonly maxBytes = 16 * 1024 * 1024,
  ) {}

  /** The last position the window covers. */
  get last(): number {
    return this.#last;
  }

  /** One event of an own commit, in position order; `bytes` is its JSON text's length. */
  add(event: RecordedEvent, bytes: number): void {
    if (event.position !== this.#last + 1) this.clear(event.position);
    this.#events.push(event);
    this.#sizes.push(bytes);
    this.#bytes += bytes;
    this.#last = event.position;
    this.#trim();
  }

  /** Events after `fromPosition`, at most `limit` (-1: no limit); undefined when the window does not start there. */
  read(fromPosition: number, limit: number): RecordedEvent[] | undefined {
    if (fromPosition + 1 < this.#first || fromPosition > this.#last || this.#last < this.#first) return undefined;
    const start = this.#indexAfter(fromPosition);
    return this.#events.slice(start, limit < 0 ? undefined : start + limit);
  }

  /** A truncation: the stream's events before `beforeRevision` are gone from the log, so from here too. */
  truncated(stream: string, beforeRevision: number): void {
    const gone = (event: RecordedEvent) => event.stream === stream && event.revision < beforeRevision;
    if (!this.#events.some(gone)) return;
    const events: RecordedEvent[] = [];
    const sizes: number[] = [];
    this.#events.forEach((event, index) => {
      if (gone(event)) this.#bytes -= this.#sizes[index];
      else {
        events.push(event);
        sizes.push(this.#sizes[index]);
      }
    });
    this.#events = events;
    this.#sizes = sizes;
  }

  clear(nextPosition = this.#last + 1): void {
    this.#events = [];
    this.#sizes = [];
    this.#bytes = 0;
    this.#first = nextPosition;
    this.#last = nextPosition - 1;
  }

  /** Index of the first kept event with a position above `position`. */
  #indexAfter(position: number): number {
    let low = 0;
    let high = this.#events.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#events[middle].position <= position) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The oldest half goes when the window is full (one copy per half window, not one per event). */
  #trim(): void {
    if (this.#events.length <= this.maxEvents && this.#bytes <= this.maxBytes) return;
    let drop = this.#events.length >>> 1;
    let dropped = this.#sizes.slice(0, drop).reduce((sum, size) => sum + size, 0);
    // A few huge events: drop until the bytes fit.
    while (drop < this.#events.length && this.#bytes - dropped > this.maxBytes) dropped += this.#sizes[drop++];
    this.#events = this.#events.slice(drop);
    this.#sizes = this.#sizes.slice(drop);
    this.#bytes -= dropped;
    this.#first = this.#events.length > 0 ? this.#events[0].position : this.#last + 1;
  }
}
