// The embedded bus's durable state in one SQLite file: topics, an append-only message log per
// topic partition, and committed offsets per consumer group. Reads are synchronous on this
// connection (better-sqlite3); publishes and offset commits go to the writer thread in groups
// (writeBatch.ts), so their fsync never blocks the event loop.
import Database from "better-sqlite3";
import { partitionForKey } from "../partition.js";
import { toBuffer, UnknownTopicError, type BusRecord, type OutgoingMessage, type TopicSpec } from "../bus.js";
import { WriteBatch } from "./writeBatch.js";
import type { Appended } from "./logWriter.js";
import { RecentRecords } from "./recentRecords.js";

interface MessageRow {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  value: Buffer;
  headers: string;
  timestamp: number;
}

export type { Appended } from "./logWriter.js";

/** Committed offsets of a group nobody used for this long are forgotten, so they stop pinning retention. */
const abandonedGroupMs = 7 * 24 * 3600 * 1000;

export class MessageLog {
  private readonly db: Database.Database;
  private readonly partitionCounts = new Map<string, number>();
  private readonly statements;
  /** Publishes and offset commits, written in groups on the writer thread (one fsync per group). */
  private readonly writes: WriteBatch;
  /** What this log published last, for consumers reading right behind it. */
  private readonly recent = new RecentRecords();

  constructor(
    file: string,
    private readonly now: () => number = Date.now,
  ) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    // FULL: publish resolves only after the WAL is fsync'd, so an acknowledged message survives power loss.
    this.db.pragma("synchronous = FULL");
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS bus_topics (
        name TEXT PRIMARY KEY,
        partitions INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS bus_partitions (
        topic TEXT NOT NULL,
        partition INTEGER NOT NULL,
        next_offset INTEGER NOT NULL,
        PRIMARY KEY (topic, partition)
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS bus_messages (
        topic TEXT NOT NULL,
        partition INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        key TEXT NOT NULL,
        value BLOB NOT NULL,
        headers TEXT NOT NULL,
        timestamp INTEGER NOT NULL
      );
      CREATE UNIQUE INDEX IF NOT EXISTS bus_messages_position ON bus_messages (topic, partition, offset);
      CREATE TABLE IF NOT EXISTS bus_offsets (
        group_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        partition INTEGER NOT NULL,
        next_offset INTEGER NOT NULL,
        updated INTEGER NOT NULL,
        PRIMARY KEY (group_id, topic, partition)
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS bus_offsets_partition ON bus_offsets (topic, partition, next_offset);
    `);
    this.statements = {
      topics: this.db.prepare<[], { name: string; partitions: number }>("SELECT name, partitions FROM bus_topics"),
      insertTopic: this.db.prepare<[string, number]>("INSERT OR IGNORE INTO bus_topics (name, partitions) VALUES (?, ?)"),
      insertPartition: this.db.prepare<[string, number]>(
        "INSERT OR IGNORE INTO bus_partitions (topic, partition, next_offset) VALUES (?, ?, 0)",
      ),
      nextOffset: this.db.prepare<[string, number], { next_offset: number }>(
        "SELECT next_offset FROM bus_partitions WHERE topic = ? AND partition = ?",
      ),
      read: this.db.prepare<[string, number, number, number], MessageRow>(
        "SELECT topic, partition, offset, key, value, headers, timestamp FROM bus_messages " +
          "WHERE topic = ? AND partition = ? AND offset >= ? ORDER BY offset LIMIT ?",
      ),
      oldest: this.db.prepare<[string, number], { offset: number }>(
        "SELECT offset FROM bus_messages WHERE topic = ? AND partition = ? ORDER BY offset LIMIT 1",
      ),
      committed: this.db.prepare<[string, string, number], { next_offset: number }>(
        "SELECT next_offset FROM bus_offsets WHERE group_id = ? AND topic = ? AND partition = ?",
      ),
      upsertCommitted: this.db.prepare<[string, string, number, number, number]>(
        "INSERT INTO bus_offsets (group_id, topic, partition, next_offset, updated) VALUES (?, ?, ?, ?, ?) " +
          "ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = excluded.next_offset, updated = excluded.updated",
      ),
      forgetGroups: this.db.prepare<[number]>(
        "DELETE FROM bus_offsets WHERE group_id IN " + "(SELECT group_id FROM bus_offsets GROUP BY group_id HAVING MAX(updated) < ?)",
      ),
    };
    for (const { name, partitions } of this.statements.topics.all()) this.partitionCounts.set(name, partitions);
    this.statements.forgetGroups.run(now() - abandonedGroupMs);
    // After the tables exist: the writer thread prepares its statements against them.
    this.writes = new WriteBatch(file);
  }

  ensureTopics(topics: readonly TopicSpec[]): void {
    for (const { name, partitions } of topics) {
      if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`topic ${name}: partitions must be a positive integer`);
    }
    // IMMEDIATE (here and in startOffset): the writer thread may hold the write lock; waiting for
    // it up front cannot fail half-way on a lock upgrade as a deferred transaction can.
    this.db
      .transaction(() => {
        for (const { name, partitions } of topics) {
          this.statements.insertTopic.run(name, partitions);
          for (let p = 0; p < partitions; p++) this.statements.insertPartition.run(name, p);
        }
      })
      .immediate();
    for (const { name, partitions } of this.statements.topics.all()) this.partitionCounts.set(name, partitions);
  }

  /** The topic's partition count, or undefined for a topic not created. */
  knownPartitions(topic: string): number | undefined {
    return this.partitionCounts.get(topic);
  }

  partitions(topic: string): number {
    const count = this.partitionCounts.get(topic);
    if (count === undefined) throw new UnknownTopicError(topic);
    return count;
  }

  /** Appends in order; resolves once durable, with each message's partition and offset. */
  async append(topic: string, messages: readonly OutgoingMessage[]): Promise<Appended[]> {
    const partitions = this.partitions(topic);
    const timestamp = this.now();
    const encoded = messages.map((message) => ({
      partition: partitionForKey(message.key, partitions),
      key: message.key,
      value: message.value, // text stays text until the writer thread (see LogMessage.value)
      headers: JSON.stringify(message.headers ?? {}),
    }));
    const appended = await this.writes.append({ op: "append", topic, timestamp, messages: encoded });
    appended.forEach(({ partition, offset }, index) => {
      const { key, value } = encoded[index];
      this.recent.add({
        topic,
        partition,
        offset: String(offset),
        key,
        value: toBuffer(value),
        headers: { ...messages[index].headers },
        timestamp,
      });
    });
    return appended;
  }

  read(topic: string, partition: number, fromOffset: number, limit: number): BusRecord[] {
    // From memory only while nothing was published after the tail (by another process, or by this
    // one a moment ago): otherwise a short read would pass for "caught up".
    const end = this.recent.end(topic, partition);
    if (end !== undefined && end === this.endOffset(topic, partition)) {
      const recent = this.recent.read(topic, partition, fromOffset, limit);
      if (recent) return recent;
    }
    return this.readFile(topic, partition, fromOffset, limit);
  }

  private readFile(topic: string, partition: number, fromOffset: number, limit: number): BusRecord[] {
    return this.statements.read.all(topic, partition, fromOffset, limit).map((row) => ({
      topic: row.topic,
      partition: row.partition,
      offset: String(row.offset),
      key: row.key,
      value: row.value,
      headers: JSON.parse(row.headers) as Record<string, string>,
      timestamp: row.timestamp,
    }));
  }

  /**
   * The group's next offset on a partition. A group new to the partition starts at the oldest
   * retained message or at the end, and that start is stored so retention keeps what it will read.
   */
  startOffset(groupId: string, topic: string, partition: number, fromBeginning: boolean): number {
    return this.db
      .transaction(() => {
        const committed = this.statements.committed.get(groupId, topic, partition);
        if (committed) return committed.next_offset;
        const end = this.statements.nextOffset.get(topic, partition)!.next_offset;
        const start = fromBeginning ? (this.statements.oldest.get(topic, partition)?.offset ?? end) : end;
        this.statements.upsertCommitted.run(groupId, topic, partition, start, this.now());
        return start;
      })
      .immediate();
  }

  /** Stores the group's next offset (and drops what every group has read); resolves once durable. */
  commit(groupId: string, topic: string, partition: number, nextOffset: number): Promise<void> {
    return this.writes.commit({ op: "commit", groupId, topic, partition, nextOffset, updated: this.now() });
  }

  /** The partition's next offset: where the next publish lands. */
  endOffset(topic: string, partition: number): number {
    return this.statements.nextOffset.get(topic, partition)?.next_offset ?? 0;
  }

  /** Messages still stored for a partition (what retention has not deleted yet). */
  retained(topic: string, partition: number): number {
    return (
      this.db.prepare("SELECT COUNT(*) AS n FROM bus_messages WHERE topic = ? AND partition = ?").get(topic, partition) as { n: number }
    ).n;
  }

  /** Writes what is queued, then closes both connections. */
  async close(): Promise<void> {
    await this.writes.close();
    this.db.close();
  }
}
