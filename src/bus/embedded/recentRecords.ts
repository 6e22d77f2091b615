import type { BusRecord } from "../bus.js";

interface PartitionTail {
  records: BusRecord[];
  /** Offset of records[0]. */
  first: number;
  bytes: number;
}

/**
 * The records this bus published last, per partition, as consumers read them: the runner and the
 * delivery workers read what was just published, and served from here that is no query and no row
 * per consumer read.
 *
 * A partition's tail is exactly the log's offsets [first, first + length): records are added only
 * when they follow on from the last one (a gap is another process's publish: the tail starts
 * again), and the caller serves a read from it only while the partition's end is the tail's end,
 * so a short read never passes for "caught up". Retention deletes only offsets every group has
 * committed past, which no consumer reads again, so the tail need not follow it.
 */
export class RecentRecords {
  readonly #tails = new Map<string, PartitionTail>();

  constructor(
    /** Per partition: twice the consumers' read-ahead (256), which is as far behind as they read. */
    private readonly maxRecords = 512,
    /** Per partition, in value bytes: with ~50 partitions (invocations, deliveries, workflow runs, replies), ~50 MB at most. */
    private readonly maxBytes = 1024 * 1024,
  ) {}

  add(record: BusRecord): void {
    const key = `${record.topic}\u0000${record.partition}`;
    const offset = Number(record.offset);
    let tail = this.#tails.get(key);
    if (!tail || offset !== tail.first + tail.records.length) {
      tail = { records: [], first: offset, bytes: 0 };
      this.#tails.set(key, tail);
    }
    tail.records.push(record);
    tail.bytes += record.value.length;
    if (tail.records.length > this.maxRecords || tail.bytes > this.maxBytes) {
      // The older half goes (one copy per half tail, not one per record).
      const drop = tail.records.length >>> 1 || 1;
      for (let i = 0; i < drop; i++) tail.bytes -= tail.records[i].value.length;
      tail.records = tail.records.slice(drop);
      tail.first += drop;
    }
  }

  /** The next offset after the partition's tail; undefined when there is none. */
  end(topic: string, partition: number): number | undefined {
    const tail = this.#tails.get(`${topic}\u0000${partition}`);
    return tail && tail.first + tail.records.length;
  }

  /** Records from `fromOffset` on, at most `limit`; undefined when the tail does not hold `fromOffset`. */
  read(topic: string, partition: number, fromOffset: number, limit: number): BusRecord[] | undefined {
    const tail = this.#tails.get(`${topic}\u0000${partition}`);
    if (!tail || fromOffset < tail.first || fromOffset > tail.first + tail.records.length) return undefined;
    const start = fromOffset - tail.first;
    return tail.records.slice(start, start + limit);
  }
}
