// The delivery worker (dispatcher role): consumes the deliveries topic keyed by listener id, so one
// listener's deliveries go out one at a time in order while other listeners go on.
// - A webhook that answers gets each delivery at once; its attempts are recorded in its
//   deliveries stream. Once it fails (or is slow), it and everything after it wait in that stream,
//   and the head is retried on a backoff schedule: the bus is never held for a dead receiver, and
//   the schedule survives restarts (the sweeper kicks listeners whose head is due).
// - A source or workflow listener gets each event as an invocation of its run (an id derived from
//   the delivery, so a copy runs once); an event that comes round a cycle is stopped and logged.
import { LRUCache } from "lru-cache";
import type { Bus, BusConsumer, BusRecord } from "../bus/bus.js";
import { WrongExpectedRevisionError, type EventStore } from "../store/eventStore.js";
import { streams } from "../../commands/streams.js";
import {
  dropQueue,
  emptyDeliveries,
  evolveDeliveries,
  foldDeliveries,
  givenUp,
  plan,
  recordTurn,
  type AttemptResult,
  type Delivery,
  type DeliveryEvent,
  type ListenerDeliveries,
  type RetryPolicy,
} from "../../commands/deliveries/delivery.js";
import { listenerKindOf } from "../../commands/subscriptions/subscription.js";
import type { RunLogStore } from "../../commands/runLogs/runLogStore.js";
import { skippedRunLogged } from "../../commands/runLogs/runLog.js";
import type { WebhooksReadModel, Webhook } from "../readModels/webhooks.js";
import type { DeliveriesReadModel } from "../readModels/deliveries.js";
import type { SourcesReadModel } from "../readModels/sources.js";
import type { Webhooks } from "../subscriptions/webhooks.js";
import type { InvocationQueue } from "../runner/invocations.js";
import type { WorkflowRunQueue } from "../workflows/runner.js";
import type { WorkflowsReadModel } from "../readModels/workflows.js";
import type { Clock } from "../ids.js";
import { DELIVERIES_TOPIC, kickMessage, readDeliveryMessage } from "./messages.js";
import { sendToWebhook, type SendOptions } from "./webhookSender.js";
import { log } from "../observability/log.js";

/** Longest chain of sources an event may travel before it is stopped. */
export const MAX_CHAIN = 16;

export interface DeliveryWorkerDeps {
  readonly bus: Bus;
  readonly store: EventStore;
  readonly clock: Clock;
  readonly webhooks: WebhooksReadModel;
  readonly webhookService: Pick<Webhooks, "disable" | "signingSecrets">;
  readonly deliveries: DeliveriesReadModel;
  readonly sources: SourcesReadModel;
  readonly invocations: InvocationQueue;
  readonly workflows: WorkflowsReadModel;
  readonly workflowRuns: WorkflowRunQueue;
  readonly runLogs: RunLogStore;
  readonly projectorPosition: () => number;
  readonly policy: RetryPolicy;
  readonly send: SendOptions;
  /** An attempt slower than this sends the listener to its queue (default 5 s). */
  readonly slowMs?: number;
  /** How often the sweeper looks for queues whose head is due (default 5 s). */
  readonly sweepMs?: number;
  /** Webhook requests in flight on this node at once (default 256). */
  readonly maxConcurrentSends?: number;
  readonly log?: (message: string, error?: unknown) => void;
}

interface Cached {
  state: ListenerDeliveries;
  revision: number | undefined;
}

/** A turn drains a listener's due queue for at most this long, then kicks itself to go on. */
const TURN_BUDGET_MS = 2_000;

export class DeliveryWorker {
  readonly #cache = new LRUCache<string, Cached>({ max: 10_000 });
  readonly #kicks = new Map<string, NodeJS.Timeout>();
  #consumer: BusConsumer | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #sending = 0;
  readonly #sendWaiters: (() => void)[] = [];
  #stopped = false;

  constructor(private readonly deps: DeliveryWorkerDeps) {}

  async start(): Promise<void> {
    this.#consumer = await this.deps.bus.consume({
      groupId: "headwater.dispatchers",
      topics: [DELIVERIES_TOPIC],
      keyed: { handler: (records, more, arrived) => this.#handle(records, more, arrived) },
    });
    const sweepMs = this.deps.sweepMs ?? 5_000;
    this.#sweeper = setInterval(() => void this.#sweep().catch((error) => this.#log("delivery: sweeping queues failed", error)), sweepMs);
    this.#sweeper.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    for (const timer of this.#kicks.values()) clearTimeout(timer);
    this.#kicks.clear();
    await this.#consumer?.stop();
  }

  /** Every waiting record of one listener, in order (a webhook's turn goes on taking those that arrive meanwhile). */
  async #handle(records: readonly BusRecord[], more: () => BusRecord[], arrived: () => Promise<void>): Promise<void> {
    const listenerId = records[0].key;
    const read = (taken: readonly BusRecord[]): Delivery[] => {
      const deliveries: Delivery[] = [];
      for (const record of taken) {
        const message = readDeliveryMessage(record);
        if (!message) this.#log(`delivery: skipped an unreadable message at ${record.topic}[${record.partition}]@${record.offset}`);
        else if (message.kind === "delivery") deliveries.push(message.delivery);
      }
      return deliveries;
    };
    switch (listenerKindOf(listenerId)) {
      case "webhook":
        return this.#webhookTurn(
          listenerId,
          read(records),
          () => {
            const taken = more();
            return taken.length === 0 ? undefined : read(taken); // a kick has no delivery, but it came
          },
          arrived,
        );
      case "source":
      case "workflow":
        return this.#toRun(listenerId, read(records));
      default:
        return;
    }
  }

  /** Each delivery as a run of the listening source or workflow. */
  async #toRun(listenerId: string, deliveries: readonly Delivery[]): Promise<void> {
    const isWorkflow = listenerKindOf(listenerId) === "workflow";
    const listener = isWorkflow ? this.deps.workflows.workflow(listenerId) : this.deps.sources.source(listenerId);
    if (!listener) return;
    for (const delivery of deliveries) {
      const chain = [...delivery.chain, delivery.emitterId];
      const invocationId = `inv_${delivery.id.slice("msg_".length)}`;
      if (chain.includes(listenerId) || chain.length > MAX_CHAIN) {
        // Said in the listener's logs; the event stops here.
        const path = [...chain, listenerId].join(" → ");
        const detail = chain.includes(listenerId) ? `cycle ${path}` : `the chain ${path} is longer than ${MAX_CHAIN} emitters`;
        await this.deps.runLogs.append(
          skippedRunLogged({
            sourceId: listenerId,
            userId: listener.creatorId,
            invocationId,
            trigger: "subscription",
            nowMs: this.deps.clock.now(),
            reason: chain.includes(listenerId) ? "cycle" : "chain",
            detail,
            chain,
          }),
        );
        continue;
      }
      const payload = delivery.payload as { event?: unknown };
      const run = {
        invocationId,
        trigger: "subscription" as const,
        event: payload?.event ?? null,
        chain,
        minPosition: this.deps.projectorPosition(),
        enqueuedMs: this.deps.clock.now(),
      };
      if (isWorkflow) await this.deps.workflowRuns.submit({ ...run, workflowId: listenerId });
      else await this.deps.invocations.submit({ ...run, sourceId: listenerId });
    }
  }

  /**
   * One turn of a webhook: its deliveries go out in lanes, one per emitter (each emitter's in order,
   * emitters side by side), and the turn keeps taking the deliveries that arrive while it runs, so a
   * new event is sent as soon as its own lane is free rather than after the slowest lane and the
   * record of the turn before. Attempts are recorded in the listener's stream as they complete, one
   * append at a time with whatever completed meanwhile. The first failure (or slow answer) ends the
   * sending: what was not sent is queued behind it, in order, and the queue is drained as before.
   * The turn takes new deliveries for at most TURN_BUDGET_MS, then ends so its offsets commit.
   */
  async #webhookTurn(
    listenerId: string,
    incoming: readonly Delivery[],
    /** The deliveries of the records that arrived since; undefined when none did. */
    more: () => Delivery[] | undefined,
    arrived: () => Promise<void>,
  ): Promise<void> {
    const webhook = this.deps.webhooks.webhook(listenerId);
    // Deleted, paused or disabled: nothing goes out (the router stops routing to it too).
    if (!webhook || webhook.status !== "active") return;
    let current = await this.#load(listenerId);
    const until = this.deps.clock.now() + TURN_BUDGET_MS;
    const slowMs = this.deps.slowMs ?? 5_000;
    /** Taken by this turn and perhaps not recorded yet: a copy arriving meanwhile is a duplicate. */
    const taken = new Set<string>();
    const lanes = new Map<string, Delivery[]>();
    const running = new Set<Promise<void>>();
    let attempts: (AttemptResult & { delivery: Delivery })[] = [];
    let unsent: Delivery[] = [];
    let healthy = true;
    let recording: Promise<void> | undefined;
    let recordFailure: Error | undefined;

    const record = (): Promise<void> => {
      if (recording) return recording;
      if (attempts.length === 0 && unsent.length === 0) return Promise.resolve();
      recording = (async () => {
        while (attempts.length > 0 || unsent.length > 0) {
          const turn = { attempts, unsent };
          attempts = [];
          unsent = [];
          current = await this.#record(listenerId, current, (state) =>
            recordTurn(state, { listenerId, ...turn, now: this.deps.clock.now(), random: Math.random() }, this.deps.policy),
          );
        }
      })()
        .catch((error: unknown) => {
          recordFailure ??= error instanceof Error ? error : new Error(String(error));
          healthy = false;
        })
        .finally(() => {
          recording = undefined;
        });
      return recording;
    };

    const runLane = async (emitterId: string, lane: Delivery[]): Promise<void> => {
      while (lane.length > 0 && healthy) {
        const delivery = lane.shift()!;
        const result = await this.#attempt(webhook, delivery);
        attempts.push({ ...result, delivery });
        if (!result.ok || result.latencyMs > slowMs) healthy = false;
        void record();
      }
      // Behind a failure, in order: they wait in the queue.
      unsent.push(...lane.splice(0));
      lanes.delete(emitterId);
    };

    const take = (deliveries: readonly Delivery[]): void => {
      const { send, queue } = plan(
        current.state,
        deliveries.filter((d) => d.resend !== undefined || !taken.has(d.id)),
      );
      for (const d of [...send, ...queue]) taken.add(d.id);
      if (!healthy || queue.length > 0) {
        unsent.push(...send, ...queue);
        return;
      }
      for (const delivery of send) {
        const lane = lanes.get(delivery.emitterId);
        if (lane) {
          lane.push(delivery);
          continue;
        }
        const started = [delivery];
        lanes.set(delivery.emitterId, started);
        const run = runLane(delivery.emitterId, started).finally(() => running.delete(run));
        running.add(run);
      }
    };

    take(incoming);
    while (healthy && !this.#stopped && this.deps.clock.now() < until) {
      const idle = Promise.all([...running]).then(() => "idle" as const);
      const next = await Promise.race([arrived().then(() => "arrived" as const), idle]);
      const later = more();
      if (later !== undefined) {
        take(later);
        continue;
      }
      // Nothing runs and nothing came; or woken without records, which means the consumer stops
      // (a shutdown, or a rebalance that takes the partition away): finish what runs, and end.
      if (next === "arrived") await idle;
      break;
    }
    await Promise.all([...running]);
    // Everything attempted or left unsent is recorded before the turn ends (and its offsets commit).
    while (recordFailure === undefined) {
      if (recording) await recording;
      else if (attempts.length > 0 || unsent.length > 0) await record();
      else break;
    }
    if (recordFailure !== undefined) throw recordFailure;
    current = await this.#drain(webhook, current);
    await this.#giveUpIfLong(webhook, current);
  }

  /** Retries the queue's head while it is due and answered, within the turn's budget. */
  async #drain(webhook: Webhook, current: Cached): Promise<Cached> {
    const listenerId = webhook.id;
    const until = this.deps.clock.now() + TURN_BUDGET_MS;
    for (;;) {
      const head = current.state.queue[0];
      const now = this.deps.clock.now();
      if (!head || head.nextAttemptAt > now || this.#stopped) break;
      if (now > until) {
        this.#kickAt(listenerId, now);
        return current;
      }
      const result = await this.#attempt(webhook, head.delivery);
      current = await this.#record(listenerId, current, (state) =>
        recordTurn(
          state,
          { listenerId, attempts: [{ ...result, delivery: head.delivery }], unsent: [], now: this.deps.clock.now(), random: Math.random() },
          this.deps.policy,
        ),
      );
      if (!result.ok) break;
    }
    const head = current.state.queue[0];
    if (head) this.#kickAt(listenerId, head.nextAttemptAt);
    return current;
  }

  /** A webhook failing without a success for the policy's limit is disabled, and what waits for it is dropped with the reason. */
  async #giveUpIfLong(webhook: Webhook, current: Cached): Promise<void> {
    const now = this.deps.clock.now();
    if (!givenUp(current.state, now, this.deps.policy)) return;
    const hours = ((now - current.state.failingSince!) / 3_600_000).toFixed(1);
    const reason = `deliveries failed for ${hours} h (${current.state.consecutiveFailures} attempts in a row); resume the webhook to send again`;
    await this.deps.webhookService.disable(webhook.id, reason, { metadata: { by: "delivery" } });
    await this.#record(webhook.id, current, (state) => dropQueue(state, webhook.id, `webhook disabled: ${reason}`, now));
    this.#log(`delivery: webhook ${webhook.id} disabled: ${reason}`);
  }

  async #attempt(webhook: Webhook, delivery: Delivery): Promise<AttemptResult> {
    await this.#acquireSend();
    try {
      return await sendToWebhook(
        webhook.url,
        this.deps.webhookService.signingSecrets(webhook, this.deps.clock.now()),
        delivery,
        () => this.deps.clock.now(),
        this.deps.send,
      );
    } finally {
      this.#releaseSend();
    }
  }

  /** Appends what `decide` makes of the listener's current state; another writer in between → decided again on fresh state. */
  async #record(listenerId: string, current: Cached, decide: (state: ListenerDeliveries) => DeliveryEvent[]): Promise<Cached> {
    for (let attempt = 0; ; attempt++) {
      const events = decide(current.state);
      if (events.length === 0) return current;
      try {
        const result = await this.deps.store.append(streams.deliveries(listenerId), events, {
          expectedRevision: current.revision ?? "no_stream",
        });
        const next: Cached = { state: events.reduce(evolveDeliveries, current.state), revision: result.nextExpectedRevision };
        this.#cache.set(listenerId, next);
        if (next.state.queue.length === 0 && result.nextExpectedRevision >= 2_000) {
          // Nothing waits: the stream only needs recent attempts (the read model keeps the newest 1000 for listings).
          await this.deps.store.truncateBefore(streams.deliveries(listenerId), result.nextExpectedRevision - 1_000);
        }
        return next;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= 10) throw error;
        this.#cache.delete(listenerId);
        current = await this.#load(listenerId);
      }
    }
  }

  async #load(listenerId: string): Promise<Cached> {
    const cached = this.#cache.get(listenerId);
    if (cached) return cached;
    const recorded = await this.deps.store.readStream(streams.deliveries(listenerId));
    const loaded: Cached = {
      state:
        recorded.length === 0 ? emptyDeliveries : foldDeliveries(recorded.map((e) => ({ type: e.type, data: e.data }) as DeliveryEvent)),
      revision: await this.deps.store.streamRevision(streams.deliveries(listenerId)),
    };
    this.#cache.set(listenerId, loaded);
    return loaded;
  }

  /** Nudges the listener's owner (whichever node holds its partition) when its head is due. */
  #kickAt(listenerId: string, at: number): void {
    if (this.#stopped) return;
    const existing = this.#kicks.get(listenerId);
    if (existing) clearTimeout(existing);
    const timer = setTimeout(
      () => {
        this.#kicks.delete(listenerId);
        void this.deps.bus.publish(DELIVERIES_TOPIC, [kickMessage(listenerId)]).catch((error) => this.#log("delivery: kick failed", error));
      },
      Math.min(Math.max(0, at - this.deps.clock.now()), 60_000),
    );
    timer.unref();
    this.#kicks.set(listenerId, timer);
  }

  /** Queues whose head is due get a kick: after a restart or a rebalance, nobody holds their timers. */
  async #sweep(): Promise<void> {
    const due = this.deps.deliveries.dueQueues(this.deps.clock.now()).filter((id) => !this.#kicks.has(id));
    if (due.length > 0) await this.deps.bus.publish(DELIVERIES_TOPIC, due.map(kickMessage));
  }

  async #acquireSend(): Promise<void> {
    while (this.#sending >= (this.deps.maxConcurrentSends ?? 256)) await new Promise<void>((resolve) => this.#sendWaiters.push(resolve));
    this.#sending++;
  }

  #releaseSend(): void {
    this.#sending--;
    this.#sendWaiters.shift()?.();
  }

  #log(message: string, error?: unknown): void {
    (this.deps.log ?? ((m: string, e?: unknown) => log.error({ err: e }, m)))(message, error);
  }
}
