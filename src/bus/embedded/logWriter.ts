// The embedded bus's writes (publishes and offset commits), run on its writer thread
// (logWriterThread.ts): the ops of one group share a transaction and so one fsync, each in its
// own savepoint so one failing op does not undo the others.
import type { Database } from "better-sqlite3";
import type { EncodedError } from "../../sqliteWriter/thread.js";

export interface LogMessage {
  readonly partition: number;
  readonly key: string;
  /**
   * UTF-8 text when the publisher gave text: a string crosses to the writer thread as a copy of its
   * characters, where a Buffer (usually a slice of Node's 8 KB pool) is cloned with its whole
   * ArrayBuffer, several times the cost on the event loop.
   */
  readonly value: Uint8Array | string;
  /** JSON text. */
  readonly headers: string;
}

export type LogWrite =
  | { readonly op: "append"; readonly topic: string; readonly messages: readonly LogMessage[]; readonly timestamp: number }
  | {
      readonly op: "commit";
      readonly groupId: string;
      readonly topic: string;
      readonly partition: number;
      readonly nextOffset: number;
      readonly updated: number;
    };

export interface Appended {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

export type LogWriteOutcome = { readonly value: Appended[] | undefined } | { readonly error: EncodedError };

export class MessageLogWriter {
  private readonly statements;
  private readonly single: (write: LogWrite) => Appended[] | undefined;
  private readonly group: (writes: readonly LogWrite[]) => LogWriteOutcome[];

  constructor(db: Database, encodeError: (error: unknown) => EncodedError) {
    this.statements = {
      nextOffset: db.prepare<[string, number], { next_offset: number }>(
        "SELECT next_offset FROM bus_partitions WHERE topic = ? AND partition = ?",
      ),
      setNextOffset: db.prepare<[number, string, number]>("UPDATE bus_partitions SET next_offset = ? WHERE topic = ? AND partition = ?"),
      insertMessage: db.prepare<[string, number, number, string, Buffer, string, number]>(
        "INSERT INTO bus_messages (topic, partition, offset, key, value, headers, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      upsertCommitted: db.prepare<[string, string, number, number, number]>(
        "INSERT INTO bus_offsets (group_id, topic, partition, next_offset, updated) VALUES (?, ?, ?, ?, ?) " +
          "ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = excluded.next_offset, updated = excluded.updated",
      ),
      // Retention: a message every known group has committed past is never read again.
      trim: db.prepare<[string, number, string, number]>(
        "DELETE FROM bus_messages WHERE topic = ? AND partition = ? AND offset < " +
          "(SELECT MIN(next_offset) FROM bus_offsets WHERE topic = ? AND partition = ?)",
      ),
    };
    this.single = db.transaction((write: LogWrite) => (write.op === "append" ? this.append(write) : this.commit(write)));
    const group = db.transaction((writes: readonly LogWrite[]) =>
      writes.map((write): LogWriteOutcome => {
        try {
          return { value: this.single(write) };
        } catch (error) {
          return { error: encodeError(error) };
        }
      }),
    );
    this.group = (writes) => group.immediate(writes);
  }

  /** One transaction for the group; throws only when the whole transaction failed. */
  apply(writes: readonly LogWrite[]): LogWriteOutcome[] {
    return this.group(writes);
  }

  private append({ topic, messages, timestamp }: Extract<LogWrite, { op: "append" }>): Appended[] {
    const next = new Map<number, number>();
    const appended: Appended[] = [];
    for (const { partition, key, value, headers } of messages) {
      const row = next.has(partition) ? undefined : this.statements.nextOffset.get(topic, partition);
      if (!next.has(partition) && row === undefined) throw new RangeError(`topic ${topic} has no partition ${partition}`);
      const offset = next.get(partition) ?? row!.next_offset;
      this.statements.insertMessage.run(
        topic,
        partition,
        offset,
        key,
        typeof value === "string" ? Buffer.from(value, "utf8") : Buffer.from(value.buffer, value.byteOffset, value.byteLength),
        headers,
        timestamp,
      );
      next.set(partition, offset + 1);
      appended.push({ topic, partition, offset });
    }
    for (const [partition, offset] of next) this.statements.setNextOffset.run(offset, topic, partition);
    return appended;
  }

  private commit({ groupId, topic, partition, nextOffset, updated }: Extract<LogWrite, { op: "commit" }>): undefined {
    this.statements.upsertCommitted.run(groupId, topic, partition, nextOffset, updated);
    this.statements.trim.run(topic, partition, topic, partition);
    return undefined;
  }
}
