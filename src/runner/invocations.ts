import type { Bus, BusConsumer, BusRecord } from "../bus/bus.js";
import { answerRequest, type ReplyChannel } from "../bus/reply.js";
import type { HttpResponse, LogLine } from "../runtime/types.js";
import type { RunTrigger } from "../../commands/runLogs/runLog.js";
import type { Projector } from "../projector/projector.js";
import type { Source, SourcesReadModel } from "../readModels/sources.js";
import { parseJson } from "../json/bounded.js";
import type { ComponentCache } from "../components/componentCache.js";
import type { RunResult, SourceRunner } from "./sourceRunner.js";
import { RECENT_INVOCATIONS } from "../../commands/emitters/emitter.js";
import { OwnerSlots } from "./ownerSlots.js";
import { log } from "../observability/log.js";
import type { Delivery } from "../../commands/emitters/emitter.js";

/** Invocations are keyed by source id, so one source's runs happen one at a time, in order. */
export const INVOCATIONS_TOPIC = "headwater.invocations";
export const INVOCATION_PARTITIONS = 16;

/** What the bus carries to a runner. */
export interface InvocationMessage {
  readonly invocationId: string;
  readonly sourceId: string;
  readonly trigger: Extract<RunTrigger, "http" | "timer" | "manual" | "subscription">;
  readonly event: unknown;
  /** Log position the submitting node had projected: the runner's read models wait for it. */
  readonly minPosition: number;
  /** Emitters the triggering event passed through (invocations made by subscriptions). */
  readonly chain?: readonly string[];
  readonly enqueuedMs: number;
}

/** The answer a runner sends back when the submitter waits (custom HTTP responses, manual runs). */
export interface InvocationReply {
  readonly status: "done" | "duplicate" | "gone" | "paused";
  readonly ok?: boolean;
  readonly error?: { name: string; message: string; code?: string };
  readonly response?: HttpResponse;
  readonly emitted?: { id: string; channel: string }[];
  readonly logs?: LogLine[];
  /** Log position after the run's appends, for the submitter's read-your-writes. */
  readonly position?: number;
}

export class InvocationQueue {
  constructor(
    private readonly bus: Bus,
    private readonly replies: ReplyChannel,
  ) {}

  /** Durable once this resolves: the run will happen even if this node dies now. */
  async submit(message: InvocationMessage): Promise<void> {
    await this.bus.publish(INVOCATIONS_TOPIC, [{ key: message.sourceId, value: JSON.stringify(message) }]);
  }

  /** Submits and waits for the runner's answer (which may come from another node). */
  async submitAndWait(message: InvocationMessage, timeoutMs: number): Promise<InvocationReply> {
    const reply = await this.replies.request(INVOCATIONS_TOPIC, { key: message.sourceId, value: JSON.stringify(message) }, { timeoutMs });
    return JSON.parse(reply.value.toString("utf8")) as InvocationReply;
  }
}

export interface RunnerConsumerDeps {
  readonly bus: Bus;
  /** This node's reply channel: answers to its own requests skip the bus. */
  readonly replies: ReplyChannel;
  readonly projector: Projector;
  readonly sources: SourcesReadModel;
  readonly components: ComponentCache;
  readonly runner: SourceRunner;
  readonly endpointUrl: (endpointId: string) => string;
  /** Sources of one billed user running at once on this node. */
  readonly runsPerOwner: number;
  /** Read-ahead of the invocation topic per partition (the keyed consumer's pending bounds). */
  readonly maxPendingPerPartition?: number;
  readonly maxPendingBytesPerPartition?: number;
  /** Most invocations of one source run with one sandbox entry and recorded with one append (1: one at a time). */
  readonly batchMax?: number;
  /** Told the size of every batch run (metrics). */
  readonly onBatch?: (size: number) => void;
}

/**
 * The runner role: consumes invocations, runs them, answers those that carry a reply address.
 * Invocations are keyed by source: one source's runs happen one at a time, in order, while other
 * sources go on (a hanging run holds only its own source, and its owner's slot until its
 * timeout). Offsets are committed only once runs are recorded (at-least-once); a redelivered
 * invocation that was already recorded is not run twice; one that keeps failing is parked.
 */
export async function startRunner(deps: RunnerConsumerDeps): Promise<BusConsumer> {
  const failures = new Map<string, number>();
  const owners = new OwnerSlots(deps.runsPerOwner);

  const batchMax = Math.max(1, Math.min(deps.batchMax ?? 1, RECENT_INVOCATIONS));

  const answer = (record: BusRecord, reply: InvocationReply) => answerRequest(deps.bus, deps.replies, record, reply);

  /**
   * Runs invocations of one active source with one sandbox entry and one append, then answers
   * them (custom responses go back once the batch is durable). Returns false when the batch could
   * not be run as one: the caller then runs them one at a time, with their own retries and parking.
   */
  async function handleBatch(work: readonly { record: BusRecord; message: InvocationMessage }[]): Promise<boolean> {
    const sourceId = work[0].message.sourceId;
    if (work.some(({ message }) => message.sourceId !== sourceId)) return false;
    const source = deps.sources.source(sourceId);
    if (!source || !source.active) return false;
    const component = deps.components.get(source.componentId);
    if (!component) return false;
    const runnable = runnableOf(deps, source);
    let results;
    try {
      results = await deps.runner.runBatch(
        work.map(({ record, message }) => ({
          source: runnable,
          component,
          invocationId: message.invocationId,
          trigger: message.trigger,
          event: message.event,
          ...(message.chain ? { chain: message.chain } : {}),
          delivery: deliveryOf(record),
        })),
      );
    } catch (error) {
      log.warn(
        { err: error, sourceId: source.id, runs: work.length },
        "runner: a batch could not be run as one; running its invocations one at a time",
      );
      return false;
    }
    deps.onBatch?.(work.length);
    for (const [i, { record, message }] of work.entries()) {
      failures.delete(message.invocationId);
      await answer(record, replyOf(results[i]));
    }
    return true;
  }

  async function handle(record: BusRecord, message: InvocationMessage): Promise<void> {
    let reply: InvocationReply;
    try {
      reply = await runInvocation(deps, message, deliveryOf(record));
      failures.delete(message.invocationId);
    } catch (error) {
      // The batch is retried by the bus (recorded runs are skipped); one that keeps failing is parked.
      const attempts = (failures.get(message.invocationId) ?? 0) + 1;
      failures.set(message.invocationId, attempts);
      if (attempts < PARK_AFTER_ATTEMPTS) throw error;
      reply = await parkInvocation(
        deps,
        message,
        deliveryOf(record),
        `${(error as Error).message ?? String(error)} (after ${attempts} attempts)`,
      );
      failures.delete(message.invocationId);
    }
    await answer(record, reply);
  }

  return deps.bus.consume({
    groupId: "headwater.runners",
    topics: [INVOCATIONS_TOPIC],
    keyed: {
      // Every waiting invocation of one source, in order.
      handler: async (records) => {
        const work = records.map((record) => ({ record, message: readInvocation(record) }));
        const newest = Math.max(0, ...work.map((w) => w.message?.minPosition ?? 0));
        await deps.projector.waitFor(newest);
        const owner = deps.sources.source(records[0].key)?.creatorId ?? "";
        await owners.acquire(owner);
        try {
          const readable = work.filter((w): w is { record: BusRecord; message: InvocationMessage } => w.message !== undefined);
          for (let i = 0; i < readable.length; i += batchMax) {
            const chunk = readable.slice(i, i + batchMax);
            // A batch that failed before (being retried by the bus) goes one at a time: a poisoned invocation is parked alone.
            const retried = chunk.some(({ message }) => failures.has(message.invocationId));
            if (batchMax > 1 && !retried && (await handleBatch(chunk))) continue;
            for (const { record, message } of chunk) {
              await handle(record, message);
              deps.onBatch?.(1);
            }
          }
        } finally {
          owners.release(owner);
        }
      },
      ...(deps.maxPendingPerPartition !== undefined ? { maxPendingPerPartition: deps.maxPendingPerPartition } : {}),
      ...(deps.maxPendingBytesPerPartition !== undefined ? { maxPendingBytesPerPartition: deps.maxPendingBytesPerPartition } : {}),
    },
  });
}

/** Attempts of one invocation (each retried by the bus with backoff, ~3 to 6 s in all) before it is parked. */
export const PARK_AFTER_ATTEMPTS = 6;

function readInvocation(record: BusRecord): InvocationMessage | undefined {
  try {
    const message = parseJson(record.value.toString("utf8")) as InvocationMessage;
    if (typeof message?.invocationId === "string" && typeof message.sourceId === "string") return message;
  } catch {
    // reported below
  }
  log.error(
    { topic: record.topic, partition: record.partition, offset: record.offset },
    "runner: dropped an unreadable invocation message",
  );
  return undefined;
}

/**
 * Records an invocation that cannot be processed as a failed run: its reason in the source's logs
 * and on $errors with the original event, so the user sees it and the partition moves on.
 */
async function parkInvocation(
  deps: RunnerConsumerDeps,
  message: InvocationMessage,
  delivery: Delivery,
  reason: string,
): Promise<InvocationReply> {
  const source = deps.sources.source(message.sourceId);
  const component = source ? deps.components.get(source.componentId) : undefined;
  if (!source || !component) return { status: "gone" };
  const error = { name: "InvocationParked", code: "PARKED", message: `the invocation could not be processed and was parked: ${reason}` };
  const result = await deps.runner.park(
    {
      source: runnableOf(deps, source),
      component,
      invocationId: message.invocationId,
      trigger: message.trigger,
      event: message.event,
      delivery,
    },
    error,
  );
  return {
    status: "done",
    ok: false,
    error,
    emitted: [],
    logs: [],
    ...(result.position !== undefined ? { position: result.position } : {}),
  };
}

const runnableOf = (deps: RunnerConsumerDeps, source: Source) => ({
  id: source.id,
  creatorId: source.creatorId,
  storedProps: source.configuredProps,
  endpointUrl: deps.endpointUrl(source.endpointId),
});

/** Where a record sits on the bus: a redelivery of a recorded invocation is told by it. */
export const deliveryOf = (record: BusRecord): Delivery => ({
  partition: record.partition,
  offset: record.offset,
  timestamp: record.timestamp,
});

async function runInvocation(deps: RunnerConsumerDeps, message: InvocationMessage, delivery: Delivery): Promise<InvocationReply> {
  const source = deps.sources.source(message.sourceId);
  if (!source) return { status: "gone" };
  // A paused source takes no runs, except one asked for by hand.
  if (!source.active && message.trigger !== "manual") {
    const position = await deps.runner.logSkipped(message, source);
    return { status: "paused", ...(position !== undefined ? { position } : {}) };
  }
  const component = deps.components.get(source.componentId);
  if (!component) return { status: "gone" };
  const result = await deps.runner.run({
    source: runnableOf(deps, source),
    component,
    invocationId: message.invocationId,
    trigger: message.trigger,
    event: message.event,
    ...(message.chain ? { chain: message.chain } : {}),
    delivery,
  });
  return replyOf(result);
}

function replyOf(result: RunResult): InvocationReply {
  if (result.duplicate) return { status: "duplicate" };
  const { outcome } = result;
  return {
    status: "done",
    ok: outcome.ok,
    ...(outcome.error ? { error: { name: outcome.error.name, message: outcome.error.message, code: outcome.error.code } } : {}),
    ...(result.response ? { response: result.response } : {}),
    emitted: result.emitted.map((e) => ({ id: e.data.id, channel: e.data.channel })),
    logs: outcome.logs,
    ...(result.position !== undefined ? { position: result.position } : {}),
  };
}
