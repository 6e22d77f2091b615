// The embedded bus: the default for a single process. Every Bus opened on the same file in this
// process is a client of one in-process broker (like several nodes on one Kafka cluster); the
// file is closed when the last client closes, and reopening it resumes from committed offsets.
import path from "node:path";
import { EmbeddedBroker, Member } from "./broker.js";
import { MessageLog } from "./messageLog.js";
import {
  BusClosedError,
  consumeMode,
  defaultRetryPolicy,
  stderrErrorLog,
  type Bus,
  type BusConsumer,
  type BusLog,
  type ConsumeOptions,
  type OutgoingMessage,
  type TopicSpec,
} from "../bus.js";

export interface EmbeddedBusOptions {
  /** The SQLite file; created when missing. One process per file. */
  readonly file: string;
  readonly log?: BusLog;
}

interface OpenBroker {
  readonly broker: EmbeddedBroker;
  clients: number;
}

const open = new Map<string, OpenBroker>();
const closing = new Map<string, Promise<void>>();

export async function openEmbeddedBus(options: EmbeddedBusOptions): Promise<Bus> {
  const file = path.resolve(options.file);
  await closing.get(file);
  let entry = open.get(file);
  if (!entry) {
    entry = { broker: new EmbeddedBroker(new MessageLog(file)), clients: 0 };
    open.set(file, entry);
  }
  entry.clients++;
  return new EmbeddedBus(file, entry.broker, options.log ?? stderrErrorLog);
}

function release(file: string): Promise<void> {
  const entry = open.get(file);
  if (!entry || --entry.clients > 0) return Promise.resolve();
  open.delete(file);
  const shutdown = entry.broker.shutdown().finally(() => closing.delete(file));
  closing.set(file, shutdown);
  return shutdown;
}

class EmbeddedBus implements Bus {
  private closed = false;
  private readonly members = new Set<Member>();

  constructor(
    private readonly file: string,
    private readonly broker: EmbeddedBroker,
    private readonly log: BusLog,
  ) {}

  async ensureTopics(topics: readonly TopicSpec[]): Promise<void> {
    this.assertOpen();
    this.broker.log.ensureTopics(topics);
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    if (messages.length > 0) await this.broker.publish(topic, messages);
  }

  async consume(options: ConsumeOptions): Promise<BusConsumer> {
    this.assertOpen();
    const mode = consumeMode(options);
    for (const topic of options.topics) this.broker.log.partitions(topic);
    const group = this.broker.group(options.groupId);
    const member = new Member(
      this.broker.memberId(),
      group,
      new Set(options.topics),
      mode.keyed ? { keyed: mode.keyed } : { handler: mode.handler },
      options.partitionsConcurrently ?? 1,
      options.retry ?? defaultRetryPolicy,
      this.log,
    );
    group.join(member, options.fromBeginning ?? true);
    this.members.add(member);
    return {
      stop: async () => {
        await member.stop();
        this.members.delete(member);
      },
    };
  }

  offerLocally(groupId: string, topic: string, message: OutgoingMessage, fallback: () => void): boolean {
    if (this.closed) return false;
    return this.broker.existingGroup(groupId)?.offerLocally(this.members, topic, message, fallback) ?? false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const member of this.members) member.abandon();
    this.members.clear();
    await release(this.file);
  }

  private assertOpen(): void {
    if (this.closed) throw new BusClosedError();
  }
}
