// Request/reply over the bus port, on either adapter: a node publishes a request carrying its
// reply address and awaits the answer that another node publishes there. Each node owns one
// reply topic (`headwater.replies.<nodeId>`, one partition) and one consumer group for it, so
// no node reads anybody else's replies. Delivery is at-least-once, so a reply can arrive twice
// or after its deadline: the requester keeps the first and ignores the rest.
import { randomUUID } from "node:crypto";
import {
  BusClosedError,
  BusError,
  stderrErrorLog,
  type Bus,
  type BusConsumer,
  type BusLog,
  type BusRecord,
  type OutgoingMessage,
  type RetryPolicy,
} from "./bus.js";

/** Headers a request carries. */
export const replyHeaders = {
  replyTo: "reply-to",
  correlationId: "correlation-id",
  /** Epoch ms after which nobody awaits the reply any more. */
  deadline: "reply-deadline",
} as const;

/**
 * A reply as the requester gets it: the bytes that came over the bus, or, answered by a responder
 * in this process (answerRequest), the answer itself, never encoded. Read it with `replyJson`.
 */
export type Reply =
  | { readonly value: Buffer; readonly headers: Readonly<Record<string, string>> }
  | { readonly decoded: unknown; readonly headers: Readonly<Record<string, string>> };

/** A JSON reply's value, whichever way it came. */
export function replyJson(reply: Reply): unknown {
  return "decoded" in reply ? reply.decoded : (JSON.parse(reply.value.toString("utf8")) as unknown);
}

export interface OutgoingReply {
  readonly value: Buffer | string;
  readonly headers?: Readonly<Record<string, string>>;
}

export class ReplyTimeoutError extends BusError {
  override readonly name = "ReplyTimeoutError";
  constructor(
    readonly topic: string,
    readonly correlationId: string,
    readonly timeoutMs: number,
  ) {
    super(`no reply to the request ${correlationId} on ${topic} within ${timeoutMs} ms`);
  }
}

const nodeIdPattern = /^[A-Za-z0-9._-]{1,200}$/;

export function replyTopicFor(nodeId: string): string {
  if (!nodeIdPattern.test(nodeId)) throw new RangeError(`node id must match ${nodeIdPattern}, got ${JSON.stringify(nodeId)}`);
  return `headwater.replies.${nodeId}`;
}

export interface ReplyChannel {
  /** This node's reply topic. */
  readonly topic: string;
  /**
   * Hands a reply to a request of this very node without the bus: a responder in the same process
   * skips two durable writes for an answer that only matters while this process lives.
   */
  deliverLocally(correlationId: string, reply: Reply): boolean;
  /**
   * Publishes the request and resolves with its reply; rejects with ReplyTimeoutError. With
   * `localGroup`, a request whose partition that group's consumer on this node reads is handed to
   * it without the bus (Bus.offerLocally), with the message's `decoded`: the reply is the request's
   * only acknowledgment, so it needs to be no more durable than the requester.
   */
  request(topic: string, message: OutgoingMessage, options?: { timeoutMs?: number; localGroup?: string }): Promise<Reply>;
  /** Stops listening; requests still waiting reject with BusClosedError. */
  close(): Promise<void>;
}

export interface ReplyChannelOptions {
  readonly bus: Bus;
  /** Stable and unique per node: it names the node's reply topic and group. */
  readonly nodeId: string;
  /** Default 30000. */
  readonly timeoutMs?: number;
}

interface Pending {
  resolve(reply: Reply): void;
  reject(error: unknown): void;
}

export async function openReplyChannel(options: ReplyChannelOptions): Promise<ReplyChannel> {
  const { bus } = options;
  const replyTopic = replyTopicFor(options.nodeId);
  const pending = new Map<string, Pending>();
  await bus.ensureTopics([{ name: replyTopic, partitions: 1 }]);
  // From the beginning: a new group must not miss a reply published while it was joining; old
  // replies of a previous run carry unknown correlation ids and are dropped.
  const consumer = await bus.consume({
    groupId: replyTopic,
    topics: [replyTopic],
    fromBeginning: true,
    handler: async (record) => {
      const waiting = pending.get(record.headers[replyHeaders.correlationId] ?? "");
      waiting?.resolve({ value: record.value, headers: record.headers });
    },
  });
  let closed = false;

  return {
    topic: replyTopic,
    deliverLocally(correlationId, reply) {
      const waiting = pending.get(correlationId);
      waiting?.resolve(reply);
      return waiting !== undefined;
    },
    async request(topic, message, requestOptions = {}) {
      if (closed) throw new BusClosedError();
      const timeoutMs = requestOptions.timeoutMs ?? options.timeoutMs ?? 30_000;
      const correlationId = randomUUID();
      const reply = new Promise<Reply>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(correlationId);
          reject(new ReplyTimeoutError(topic, correlationId, timeoutMs));
        }, timeoutMs);
        const settle = (): void => {
          clearTimeout(timer);
          pending.delete(correlationId);
        };
        pending.set(correlationId, {
          resolve: (value) => (settle(), resolve(value)),
          reject: (error) => (settle(), reject(error)),
        });
      });
      const outgoing: OutgoingMessage = {
        key: message.key,
        value: message.value,
        headers: {
          ...message.headers,
          [replyHeaders.replyTo]: replyTopic,
          [replyHeaders.correlationId]: correlationId,
          [replyHeaders.deadline]: String(Date.now() + timeoutMs),
        },
      };
      const publish = (): Promise<void> =>
        bus.publish(topic, [outgoing]).catch((error: unknown) => pending.get(correlationId)?.reject(error));
      const { localGroup } = requestOptions;
      // Handed back by a consumer that let the partition go: published, unless it was answered meanwhile.
      const fallback = (): void => void (pending.has(correlationId) && publish());
      const local = message.decoded === undefined ? outgoing : { ...outgoing, decoded: message.decoded };
      if (localGroup === undefined || !bus.offerLocally?.(localGroup, topic, local, fallback)) await publish();
      return reply;
    },
    async close() {
      if (closed) return;
      closed = true;
      await consumer.stop();
      for (const waiting of [...pending.values()]) waiting.reject(new BusClosedError());
    },
  };
}

/**
 * Answers a request record with a JSON reply, when it carries a reply address and its caller may
 * still wait (its deadline, plus a second for clocks): straight to a waiter of this node's own
 * channel, as the object itself (the requester must not change it either), else over the bus as
 * JSON. A record without a reply address is answered by nothing.
 */
export async function answerRequest(bus: Bus, replies: ReplyChannel, record: BusRecord, reply: unknown): Promise<void> {
  const replyTo = record.headers[replyHeaders.replyTo];
  const correlationId = record.headers[replyHeaders.correlationId];
  const deadline = Number(record.headers[replyHeaders.deadline] ?? "0");
  if (!replyTo || !correlationId || Date.now() > deadline + 1000) return;
  if (replyTo === replies.topic && replies.deliverLocally(correlationId, { decoded: reply, headers: {} })) return;
  const value = Buffer.from(JSON.stringify(reply));
  await bus.publish(replyTo, [{ key: correlationId, value, headers: { [replyHeaders.correlationId]: correlationId } }]);
}

export interface ServeRequestsOptions {
  readonly bus: Bus;
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Produces the reply; a rejection is retried like any handler failure (the request is not lost). */
  readonly respond: (request: BusRecord) => Promise<OutgoingReply>;
  readonly partitionsConcurrently?: number;
  readonly retry?: RetryPolicy;
  readonly log?: BusLog;
}

/** Answers requests; the request's offset is committed only after its reply was published. */
export function serveRequests(options: ServeRequestsOptions): Promise<BusConsumer> {
  const log = options.log ?? stderrErrorLog;
  return options.bus.consume({
    groupId: options.groupId,
    topics: options.topics,
    partitionsConcurrently: options.partitionsConcurrently,
    retry: options.retry,
    handler: async (request) => {
      const replyTo = request.headers[replyHeaders.replyTo];
      const correlationId = request.headers[replyHeaders.correlationId];
      if (!replyTo || !correlationId) {
        // Not a request at all: retrying could never succeed, so report it and move on.
        log({
          level: "error",
          message: `message ${request.topic}[${request.partition}]@${request.offset} has no reply address; not answered`,
        });
        return;
      }
      const reply = await options.respond(request);
      await options.bus.publish(replyTo, [
        { key: correlationId, value: reply.value, headers: { ...reply.headers, [replyHeaders.correlationId]: correlationId } },
      ]);
    },
  });
}
