import type { Bus, BusConsumer, BusRecord } from "../bus/bus.js";
import { answerRequest, replyJson, type ReplyChannel } from "../bus/reply.js";
import type { HttpResponse, LogLine } from "../runtime/types.js";
import type { RunTrigger } from "../../commands/runLogs/runLog.js";
import type { Projector } from "../projector/projector.js";
import type { Source, SourcesReadModel } from "../readModels/sources.js";
import { parseJson } from "../json/bounded.js";
import type { ComponentCache } from "../components/componentCache.js";
import type { RunnableSource, RunRequest, RunResult, SourceRunner, StartedBatch } from "./sourceRunner.js";
import { RECENT_INVOCATIONS } from "../../commands/emitters/emitter.js";
import { OwnerSlots } from "./ownerSlots.js";
import { log } from "../observability/log.js";
import type { Delivery } from "../../commands/emitters/emitter.js";

/** Invocations are keyed by source id, so one source's runs happen one at a time, in order. */
export const INVOCATIONS_TOPIC = "headwater.invocations";
export const INVOCATION_PARTITIONS = 16;
/** The runners' consumer group on the invocation topic. */
export const RUNNERS_GROUP = "headwater.runners";

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
  /**
   * The id was minted for this one message (an HTTP request, a manual run), never sent in another:
   * only a redelivery of its bus record repeats it. Absent for ids derived from something that can
   * be queued twice (a timer tick every scheduler node queues, an event routed again).
   */
  readonly uniqueToRecord?: boolean;
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

  /**
   * Submits and waits for the runner's answer (which may come from another node). The answer is
   * the only acknowledgment the submitter gets, so when this node's runner reads the source's
   * partition the invocation goes to it straight, without the bus's durable write (docs/decisions.md,
   * "Custom responses skip the bus on the node that runs them").
   */
  async submitAndWait(message: InvocationMessage, timeoutMs: number): Promise<InvocationReply> {
    const reply = await this.replies.request(
      INVOCATIONS_TOPIC,
      // Handed over locally, the runner reads `decoded` and the reply comes back as an object.
      { key: message.sourceId, value: JSON.stringify(message), decoded: message },
      { timeoutMs, localGroup: RUNNERS_GROUP },
    );
    return replyJson(reply) as InvocationReply;
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

  /**
   * Records handed over locally whose answer went out: a retry of their call (a later batch of it
   * failed) skips them, since nothing else tells it they were recorded (RecordRun.local).
   */
  const answeredLocally = new WeakSet<BusRecord>();
  const answer = async (record: BusRecord, reply: InvocationReply): Promise<void> => {
    await answerRequest(deps.bus, deps.replies, record, reply);
    if (record.local) answeredLocally.add(record);
  };
  const unanswered = (records: readonly BusRecord[]): readonly BusRecord[] =>
    records.some((record) => answeredLocally.has(record)) ? records.filter((record) => !answeredLocally.has(record)) : records;

  type Work = { record: BusRecord; message: InvocationMessage };

  /**
   * Runs invocations of one active source with one sandbox entry now, and records them with one
   * append once `previous` (the source's batch before, maybe still being recorded) is; then
   * answers them (custom responses go back once the batch is durable). Resolves once the batch
   * ran, or with undefined when it cannot run as one: the caller then runs the invocations one at
   * a time, with their own retries and parking. A batch whose record fails marks its invocations
   * as failed, so the bus's retry runs them one at a time.
   */
  async function startChunk(work: readonly Work[], previous: Started | undefined): Promise<Started | undefined> {
    const sourceId = work[0].message.sourceId;
    if (work.some(({ message }) => message.sourceId !== sourceId)) return undefined;
    const source = deps.sources.source(sourceId);
    if (!source || !source.active) return undefined;
    const component = deps.components.get(source.componentId);
    if (!component) return undefined;
    const runnable = runnableOf(deps, source);
    let batch: StartedBatch;
    try {
      batch = await deps.runner.startBatch(
        work.map(({ record, message }) => ({
          ...requestOf(runnable, component, message, originOf(record)),
          ...(message.chain ? { chain: message.chain } : {}),
        })),
        previous?.batch,
      );
    } catch (error) {
      log.warn(
        { err: error, sourceId: source.id, runs: work.length },
        "runner: a batch could not be run as one; running its invocations one at a time",
      );
      return undefined;
    }
    const answered = batch.recorded.then(
      async (results) => {
        deps.onBatch?.(work.length);
        for (const [i, { record, message }] of work.entries()) {
          failures.delete(message.invocationId);
          await answer(record, replyOf(results[i]));
        }
      },
      (error: unknown) => {
        for (const { message } of work) failures.set(message.invocationId, (failures.get(message.invocationId) ?? 0) + 1);
        log.warn({ err: error, sourceId: source.id, runs: work.length }, "runner: a batch could not be recorded; the bus runs it again");
        throw error;
      },
    );
    answered.catch(() => undefined);
    return { batch, answered };
  }

  async function handle(record: BusRecord, message: InvocationMessage): Promise<void> {
    let reply: InvocationReply;
    try {
      reply = await runInvocation(deps, message, originOf(record));
      failures.delete(message.invocationId);
    } catch (error) {
      // The batch is retried by the bus (recorded runs are skipped); one that keeps failing is parked.
      const attempts = (failures.get(message.invocationId) ?? 0) + 1;
      failures.set(message.invocationId, attempts);
      if (attempts < PARK_AFTER_ATTEMPTS) throw error;
      reply = await parkInvocation(
        deps,
        message,
        originOf(record),
        `${(error as Error).message ?? String(error)} (after ${attempts} attempts)`,
      );
      failures.delete(message.invocationId);
    }
    await answer(record, reply);
  }

  return deps.bus.consume({
    groupId: RUNNERS_GROUP,
    topics: [INVOCATIONS_TOPIC],
    keyed: {
      // Every waiting invocation of one source, in order; those that arrive while its batches run
      // are taken too (more()), so a batch runs while the one before it is being recorded.
      handler: async (records, more) => {
        const owner = deps.sources.source(records[0].key)?.creatorId ?? "";
        await owners.acquire(owner);
        const answered: Promise<void>[] = [];
        let last: Started | undefined;
        try {
          let incoming: readonly BusRecord[] = unanswered(records);
          for (let round = 0; incoming.length > 0; round++) {
            const work = incoming.map((record) => ({ record, message: readInvocation(record) }));
            await deps.projector.waitFor(Math.max(0, ...work.map((w) => w.message?.minPosition ?? 0)));
            const readable = work.filter((w): w is Work => w.message !== undefined);
            for (let i = 0; i < readable.length; i += batchMax) {
              const chunk = readable.slice(i, i + batchMax);
              // A batch that failed before (being retried by the bus) goes one at a time: a poisoned invocation is parked alone.
              const retried = chunk.some(({ message }) => failures.has(message.invocationId));
              const started = batchMax > 1 && !retried ? await startChunk(chunk, last) : undefined;
              if (started) {
                last = started;
                answered.push(started.answered);
                continue;
              }
              // One at a time, in order: after every batch started before is recorded (a failure is thrown).
              for (const outcome of await Promise.allSettled(answered)) if (outcome.status === "rejected") throw outcome.reason;
              last = undefined;
              for (const { record, message } of chunk) {
                await handle(record, message);
                deps.onBatch?.(1);
              }
            }
            // A call takes at most this many rounds, so its offsets get committed now and then.
            if (round + 1 >= PIPELINED_ROUNDS) break;
            incoming = last ? more() : [];
            if (incoming.length === 0 && last) {
              // Nothing waiting yet: requests answered by the batches before often come back while
              // the newest one is recorded, so look once more when it is.
              await last.answered;
              incoming = more();
            }
          }
        } catch (error) {
          // The bus retries the whole call: let what was started finish first, so runs of one
          // source are never recorded by two attempts at once.
          await Promise.allSettled(answered);
          throw error;
        } finally {
          owners.release(owner);
        }
        const outcomes = await Promise.allSettled(answered);
        const failed = outcomes.find((outcome) => outcome.status === "rejected");
        if (failed) throw failed.reason;
      },
      ...(deps.maxPendingPerPartition !== undefined ? { maxPendingPerPartition: deps.maxPendingPerPartition } : {}),
      ...(deps.maxPendingBytesPerPartition !== undefined ? { maxPendingBytesPerPartition: deps.maxPendingBytesPerPartition } : {}),
    },
  });
}

/** Rounds of more() one handler call of the runner takes before it ends (and its offsets can be committed). */
const PIPELINED_ROUNDS = 8;

/** A batch that ran and is being recorded, and its answers once it is. */
interface Started {
  readonly batch: StartedBatch;
  readonly answered: Promise<void>;
}

/** Attempts of one invocation (each retried by the bus with backoff, ~3 to 6 s in all) before it is parked. */
export const PARK_AFTER_ATTEMPTS = 6;

function readInvocation(record: BusRecord): InvocationMessage | undefined {
  try {
    // Handed over in this process, the submitter's own object; else the bytes read off the bus.
    const message = (record.decoded ?? parseJson(record.value.toString("utf8"))) as InvocationMessage;
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
  origin: Origin,
  reason: string,
): Promise<InvocationReply> {
  const source = deps.sources.source(message.sourceId);
  const component = source ? deps.components.get(source.componentId) : undefined;
  if (!source || !component) return { status: "gone" };
  const error = { name: "InvocationParked", code: "PARKED", message: `the invocation could not be processed and was parked: ${reason}` };
  const result = await deps.runner.park(requestOf(runnableOf(deps, source), component, message, origin), error);
  return {
    status: "done",
    ok: false,
    error,
    emitted: [],
    logs: [],
    ...(result.position !== undefined ? { position: result.position } : {}),
  };
}

const runnableOf = (deps: RunnerConsumerDeps, source: Source): RunnableSource => ({
  id: source.id,
  creatorId: source.creatorId,
  storedProps: source.configuredProps,
  endpointUrl: deps.endpointUrl(source.endpointId),
  additionalProps: source.additionalProps,
});

/**
 * A run of the invocation a bus record brought (its chain is added by the callers whose runs carry
 * it on: a parked invocation's error does not).
 */
const requestOf = (
  source: RunRequest["source"],
  component: RunRequest["component"],
  message: InvocationMessage,
  origin: Origin,
): RunRequest => ({
  source,
  component,
  invocationId: message.invocationId,
  trigger: message.trigger,
  event: message.event,
  ...origin,
  ...(message.uniqueToRecord === true ? { uniqueToRecord: true } : {}),
});

/** Where a record sits on the bus: a redelivery of a recorded invocation is told by it. */
export const deliveryOf = (record: BusRecord): Delivery => ({
  partition: record.partition,
  offset: record.offset,
  timestamp: record.timestamp,
});

/**
 * How an invocation reached the runner: in a bus record, or handed over in this process (no place
 * on the bus, never redelivered; a retry of its call skips it once answered).
 */
type Origin = { readonly delivery: Delivery } | { readonly local: true };

const originOf = (record: BusRecord): Origin => (record.local ? { local: true } : { delivery: deliveryOf(record) });

async function runInvocation(deps: RunnerConsumerDeps, message: InvocationMessage, origin: Origin): Promise<InvocationReply> {
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
    ...requestOf(runnableOf(deps, source), component, message, origin),
    ...(message.chain ? { chain: message.chain } : {}),
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
