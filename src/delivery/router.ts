// The router (dispatcher role): follows the log and turns every emitted event and run log into one
// delivery per matching subscription, published on the deliveries topic keyed by listener id. One
// node routes at a time (a lease in the `router` stream, commands/deliveries/router.ts); the others
// wait to take over from its recorded position. Routing the same events twice makes the same
// delivery ids, which the delivery worker does not send twice.
import type { Bus } from "../bus/bus.js";
import { WrongExpectedRevisionError, type AllSubscription, type EventStore, type RecordedEvent } from "../store/eventStore.js";
import type { Projector } from "../projector/projector.js";
import { streams } from "../../commands/streams.js";
import { checkpoint, evolveRouter, initialRouter, type RouterCheckpointed, type RouterState } from "../../commands/deliveries/router.js";
import { deliveryId, type Delivery } from "../../commands/deliveries/delivery.js";
import { ERRORS_CHANNEL, LOGS_CHANNEL, listenerKindOf } from "../../commands/subscriptions/subscription.js";
import type { EventEmitted } from "../../commands/emitters/emitter.js";
import type { RunLogged } from "../../commands/runLogs/runLog.js";
import { emittedEventRow } from "../../projections/emittedEvents.js";
import { runLogRow } from "../../projections/runLogs.js";
import { toEmittedEvent } from "../readModels/emittedEvents.js";
import { toRunLog } from "../readModels/runLogs.js";
import { eventSummary, logSummary } from "../readModels/summaries.js";
import type { SubscriptionsReadModel } from "../readModels/subscriptions.js";
import type { Clock } from "../ids.js";
import { DELIVERIES_TOPIC, deliveryMessage } from "./messages.js";
import { log } from "../observability/log.js";

export interface RouterDeps {
  readonly store: EventStore;
  readonly bus: Bus;
  readonly projector: Pick<Projector, "waitFor">;
  readonly subscriptions: SubscriptionsReadModel;
  /** The owner and kind of an emitter that still exists. */
  readonly emitterOf: (id: string) => { ownerId: string; glob: "dc_*" | "p_*" } | undefined;
  /** Whether a listener takes deliveries now (exists, and is not paused or disabled). */
  readonly listening: (id: string) => boolean;
  /** The owner's global error workflow, which receives the $errors of the owner's other workflows. */
  readonly errorWorkflowOf?: (ownerId: string) => string | undefined;
  readonly nodeId: string;
  readonly clock: Clock;
  /** How long a lease lasts without renewal (default 10 s). */
  readonly leaseMs?: number;
  /** How soon after routing its progress is recorded (default 1 s); lease renewals record it too. */
  readonly checkpointMs?: number;
  readonly log?: (message: string, error?: unknown) => void;
}

/** How far the router (whichever node holds the lease) has routed the log: retention keeps what is past it. */
export async function routedUpTo(store: EventStore): Promise<number> {
  const [last] = await store.readStream(streams.router(), { direction: "backwards", maxCount: 1 });
  return last ? (last.data as RouterCheckpointed["data"]).position : 0;
}

/** The subscription id of deliveries to a global error workflow (there is no subscription record). */
export const ERROR_WORKFLOW_SUBSCRIPTION = "error_workflow";

/** Events the router turns into deliveries. */
const ROUTED = new Set(["EventEmitted", "RunLogged"]);

export class Router {
  #state: RouterState = initialRouter;
  #revision: number | undefined;
  #subscription: AllSubscription | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #leading = false;
  #busy: Promise<void> = Promise.resolve();
  /** Checkpoints are written one at a time (lease renewals and routing progress share the stream). */
  #writes: Promise<unknown> = Promise.resolve();
  #checkpoints = 0;
  /** How far this node (leading) has routed the log; recorded by the next checkpoint. */
  #routed = 0;
  /** A checkpoint of the routing progress, due soon. */
  #progressTimer: NodeJS.Timeout | undefined;
  readonly #leaseMs: number;
  readonly #checkpointMs: number;

  constructor(private readonly deps: RouterDeps) {
    this.#leaseMs = deps.leaseMs ?? 10_000;
    this.#checkpointMs = deps.checkpointMs ?? 1000;
  }

  /** Whether this node routes now. */
  get leading(): boolean {
    return this.#leading;
  }

  start(): void {
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#progressTimer) clearTimeout(this.#progressTimer);
    this.#progressTimer = undefined;
    await this.#subscription?.stop();
    await this.#busy;
    // The last checkpoint records what was routed since the one before (the next leader does not
    // route it again) and gives the lease up: another dispatcher takes over at its next lease
    // check instead of waiting for the lease to run out.
    if (this.#leading) {
      await this.#checkpoint(Math.max(this.#routed, this.#state.position), 0).catch((error) =>
        this.#log("router: the last checkpoint failed", error),
      );
    }
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#busy = this.#busy.then(() => this.#tick()).catch((error) => this.#log("router: lease check failed", error));
    }, ms);
    this.#timer.unref();
  }

  /** Renews the lease (leader) or tries to take it (follower); then checks again before it runs out. */
  async #tick(): Promise<void> {
    if (this.#stopped) return;
    const held = await this.#checkpoint(this.#leading ? Math.max(this.#routed, this.#state.position) : this.#state.position);
    if (this.#stopped) return;
    if (held && !this.#leading) this.#lead();
    if (!held && this.#leading) await this.#follow();
    this.#schedule(Math.max(250, Math.floor(this.#leaseMs / 3)));
  }

  /** Appends a checkpoint under the lease (held `leaseMs` from now); false when another node holds it. */
  #checkpoint(position: number, leaseMs = this.#leaseMs): Promise<boolean> {
    const write = this.#writes.then(() => this.#writeCheckpoint(position, leaseMs));
    this.#writes = write.catch(() => undefined);
    return write;
  }

  async #writeCheckpoint(position: number, leaseMs: number): Promise<boolean> {
    await this.#load();
    const events = checkpoint(this.#state, { node: this.deps.nodeId, position, now: this.deps.clock.now(), leaseMs });
    if (events.length === 0) return false;
    try {
      const result = await this.deps.store.append(streams.router(), events, { expectedRevision: this.#revision ?? "no_stream" });
      this.#state = evolveRouter(this.#state, events[0]);
      this.#revision = result.nextExpectedRevision;
      // The stream only needs its newest checkpoint.
      if (++this.#checkpoints % 100 === 0) await this.deps.store.truncateBefore(streams.router(), result.nextExpectedRevision);
      return true;
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) {
        this.#revision = undefined; // someone else wrote: read again next time
        return false;
      }
      throw error;
    }
  }

  async #load(): Promise<void> {
    if (this.#revision !== undefined && this.#leading) return; // our own writes keep the state current
    const [last] = await this.deps.store.readStream(streams.router(), { direction: "backwards", maxCount: 1 });
    this.#state = last ? evolveRouter(initialRouter, last as unknown as RouterCheckpointed) : initialRouter;
    this.#revision = last?.revision;
  }

  #lead(): void {
    this.#leading = true;
    this.#routed = this.#state.position;
    this.#log(`router: node ${this.deps.nodeId} routes from position ${this.#state.position}`);
    this.#subscription = this.deps.store.subscribeToAll({
      fromPosition: this.#state.position,
      batchSize: 500,
      onEvents: (events) => this.#route(events),
      onError: (error) => {
        this.#log("router: following the log failed", error);
        void this.#follow().then(() => this.#schedule(1000));
      },
    });
  }

  async #follow(): Promise<void> {
    this.#leading = false;
    if (this.#progressTimer) clearTimeout(this.#progressTimer);
    this.#progressTimer = undefined;
    const subscription = this.#subscription;
    this.#subscription = undefined;
    await subscription?.stop();
  }

  async #route(events: readonly RecordedEvent[]): Promise<void> {
    if (!this.#leading || this.#stopped) return;
    const last = events[events.length - 1].position;
    const routed = events.filter((e) => ROUTED.has(e.type));
    if (routed.length > 0) {
      // The read models must know every subscription made before these events.
      await this.deps.projector.waitFor(last);
      const deliveries = routed.flatMap((event) => this.#deliveriesOf(event));
      if (deliveries.length > 0) await this.deps.bus.publish(DELIVERIES_TOPIC, deliveries.map(deliveryMessage));
    }
    this.#routed = Math.max(this.#routed, last);
    // Progress is recorded a little later, with whatever is routed meanwhile: one checkpoint per
    // routed batch would be an append for every few events. Past the router's own checkpoints
    // alone there is nothing to record: recording that would append the next one, and so on.
    if (events.some((e) => e.type !== "RouterCheckpointed")) this.#checkpointSoon();
  }

  #checkpointSoon(): void {
    if (this.#progressTimer !== undefined || this.#stopped) return;
    this.#progressTimer = setTimeout(() => {
      this.#progressTimer = undefined;
      this.#busy = this.#busy
        .then(async () => {
          if (!this.#leading || this.#stopped) return;
          // The lease went to another node meanwhile: it routes from its own checkpoint on.
          if (!(await this.#checkpoint(this.#routed))) await this.#follow();
        })
        .catch((error) => this.#log("router: recording its progress failed", error));
    }, this.#checkpointMs);
    this.#progressTimer.unref();
  }

  #deliveriesOf(recorded: RecordedEvent): Delivery[] {
    const emitted = recorded.type === "EventEmitted" ? (recorded.data as EventEmitted["data"]) : undefined;
    const logged = emitted === undefined ? (recorded.data as RunLogged["data"]) : undefined;
    const emitterId = emitted?.emitterId ?? logged!.sourceId;
    const channel = emitted?.channel ?? LOGS_CHANNEL;
    const emitter = this.deps.emitterOf(emitterId);
    if (!emitter) return [];
    // A copy: the read model's answer is shared (memoized).
    const subscribed: { id: string; listenerId: string }[] = [
      ...this.deps.subscriptions.matching(emitterId, emitter.ownerId, emitter.glob, channel),
    ];
    // A workflow's errors go to its owner's global error workflow too (the seed's default), as if subscribed.
    const errorWorkflow = channel === ERRORS_CHANNEL && emitter.glob === "p_*" ? this.deps.errorWorkflowOf?.(emitter.ownerId) : undefined;
    if (errorWorkflow && !subscribed.some((s) => s.listenerId === errorWorkflow)) {
      subscribed.push({ id: ERROR_WORKFLOW_SUBSCRIPTION, listenerId: errorWorkflow });
    }
    // The log of an event stopped for coming round a cycle (or too long a chain) goes on to
    // webhooks only: run again by a source or workflow, it would start the next lap.
    const stopped = logged?.skipped === "cycle" || logged?.skipped === "chain";
    const listeners = subscribed.filter((s) => {
      const kind = listenerKindOf(s.listenerId);
      return s.listenerId !== emitterId && kind !== undefined && (!stopped || kind === "webhook") && this.deps.listening(s.listenerId);
    });
    // Most events have no listener: their payload is only made for those that do.
    if (listeners.length === 0) return [];
    const eventId = emitted?.id ?? logged!.invocationId;
    const payload = emitted ? eventSummary(toEmittedEvent(emittedEventRow(recorded)), true) : logSummary(toRunLog(runLogRow(recorded)));
    const chain = emitted?.chain ?? logged?.chain ?? [];
    const now = this.deps.clock.now();
    return listeners.map((s) => ({
      id: deliveryId(emitterId, eventId, channel, s.id),
      listenerId: s.listenerId,
      subscriptionId: s.id,
      emitterId,
      channel,
      eventId,
      payload,
      chain,
      routedAt: now,
    }));
  }

  #log(message: string, error?: unknown): void {
    (this.deps.log ?? ((m: string, e?: unknown) => (e ? log.error({ err: e }, m) : undefined)))(message, error);
  }
}
