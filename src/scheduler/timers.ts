import type { EventStore } from "../store/eventStore.js";
import { WrongExpectedRevisionError } from "../store/eventStore.js";
import type { DomainEvent } from "../../commands/decider.js";
import type { SourceRow, SourcesReadModel } from "../readModels/sources.js";
import type { ComponentCache } from "../runner/components.js";
import type { InvocationQueue } from "../runner/invocations.js";
import type { Projector } from "../projector/projector.js";
import type { QuotaGuard } from "../sources/quota.js";
import { timerIntervalSeconds, type TimerValue } from "../sources/configuredProps.js";
import { recordRunOutcome } from "../runner/runtimeState.js";
import type { Clock } from "../ids.js";
import { tickSchedule, type TickSchedule } from "./ticks.js";

/** Recorded in timer-<source id> (the newest one kept) once a tick's invocation is queued. */
export type TimerFired = DomainEvent<"TimerFired", { sourceId: string; tick: number; catchUp: boolean }>;
export const timerStream = (sourceId: string) => `timer-${sourceId}`;

/** Deterministic per tick: two schedulers firing one tick make one invocation, which runs once. */
export const timerInvocationId = (sourceId: string, tick: number) => `inv_${sourceId}_${tick}`;

export interface SchedulerDeps {
  readonly store: EventStore;
  readonly sources: SourcesReadModel;
  readonly components: ComponentCache;
  readonly invocations: InvocationQueue;
  readonly projector: Projector;
  readonly quota: QuotaGuard;
  readonly clock: Clock;
}

interface Entry {
  readonly sourceId: string;
  readonly timer: TimerValue;
  readonly schedule: TickSchedule;
  readonly propName: string;
  /** Scheduled time (ms) of the last fired tick, or the time counting starts from. */
  last: number;
  revision: number | undefined;
  next: number;
  key: string;
}

/**
 * The scheduler role. Every node may run it: a tick's invocation id is derived from the source and
 * the tick, so a tick queued twice (two nodes, or a crash between queueing and recording) still
 * runs once. Queue first, record second: a crash never loses a tick, and a restart fires a missed
 * tick once (the newest one), not every tick it slept through.
 */
export class TimerScheduler {
  readonly #entries = new Map<string, Entry>();
  #dirty = true;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #unsubscribe: (() => void) | undefined;

  constructor(private readonly deps: SchedulerDeps) {}

  start(): void {
    this.#unsubscribe = this.deps.projector.onApplied((events) => {
      if (events.some((e) => e.type === "SourceDeployed" || e.type === "SourceUpdated" || e.type === "SourceDeleted")) {
        this.#dirty = true;
        this.#wake(0);
      }
    });
    this.#wake(0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  #wake(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#running = (this.#running ?? Promise.resolve()).then(() => this.#tick()).catch((error) => {
        console.error("scheduler:", error);
      }).finally(() => this.#wake(this.#delay()));
    }, Math.max(0, delayMs));
  }

  #delay(): number {
    const now = this.deps.clock.now();
    let soonest = now + 1000;
    for (const entry of this.#entries.values()) soonest = Math.min(soonest, entry.next);
    return Math.max(5, soonest - now);
  }

  async #refresh(): Promise<void> {
    this.#dirty = false;
    const seen = new Set<string>();
    for (const row of this.deps.sources.activeSources()) {
      const timer = this.#timerOf(row);
      if (!timer) continue;
      seen.add(row.id);
      const key = JSON.stringify(timer.value);
      const existing = this.#entries.get(row.id);
      if (existing && existing.key === key) continue;
      const recorded = await this.deps.store.readStream(timerStream(row.id), { direction: "backwards", maxCount: 1 });
      const lastFired = recorded[0] as unknown as { data: TimerFired["data"]; revision: number } | undefined;
      // Counting starts at the last fired tick or when the source was last changed (deployed, resumed,
      // its timer edited), whichever is later: a paused source does not catch up on its pause.
      const last = Math.max(row.updated_at * 1000, lastFired?.data.tick ?? 0);
      const schedule = tickSchedule(timer.value);
      this.#entries.set(row.id, {
        sourceId: row.id, timer: timer.value, schedule, propName: timer.name, last, revision: lastFired?.revision, key,
        next: schedule.next(last),
      });
    }
    for (const id of [...this.#entries.keys()]) if (!seen.has(id)) this.#entries.delete(id);
  }

  #timerOf(row: SourceRow): { name: string; value: TimerValue } | undefined {
    const component = this.deps.components.get(row.component_id);
    const prop = component?.meta.component.props.find((p) => p.type === "$.interface.timer");
    if (!prop) return undefined;
    const value = (JSON.parse(row.configured_props) as Record<string, unknown>)[prop.name] as TimerValue | undefined;
    return value ? { name: prop.name, value } : undefined;
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    if (this.#dirty) await this.#refresh();
    const now = this.deps.clock.now();
    for (const entry of this.#entries.values()) {
      if (entry.next > now) continue;
      const tick = entry.schedule.due(entry.last, now);
      if (tick === undefined) continue;
      await this.#fire(entry, tick, tick === entry.schedule.next(entry.last));
    }
  }

  async #fire(entry: Entry, tick: number, onTime: boolean): Promise<void> {
    const row = this.deps.sources.source(entry.sourceId);
    if (!row || row.active !== 1) return;
    // Another scheduler may have recorded this tick (or a later one) already: then it is not queued again.
    const [recorded] = await this.deps.store.readStream(timerStream(entry.sourceId), { direction: "backwards", maxCount: 1 });
    const recordedTick = (recorded?.data as TimerFired["data"] | undefined)?.tick;
    if (recorded && recordedTick !== undefined && recordedTick >= tick) {
      entry.revision = recorded.revision;
      entry.last = recordedTick;
      entry.next = entry.schedule.next(recordedTick);
      return;
    }
    if (recorded) entry.revision = recorded.revision;
    const invocationId = timerInvocationId(entry.sourceId, tick);
    const refused = this.deps.quota.exceeded(row.creator_id);
    if (refused) {
      // The tick is skipped, and the source's $errors channel says why.
      await recordRunOutcome(this.deps.store, {
        emitterId: row.id, invocationId, strategy: undefined, emits: [],
        unconditional: [{
          event: { error: { name: "QuotaExceeded", message: `timer tick skipped: ${refused}` }, original_event: { timestamp: Math.floor(tick / 1000) } },
          meta: { name: "$errors", summary: "timer tick skipped: quota exceeded" },
        }],
        db: {}, dbChanged: false, startedMs: tick, nowMs: this.deps.clock.now(),
      }).catch(() => undefined);
    } else {
      await this.deps.invocations.submit({
        invocationId,
        sourceId: entry.sourceId,
        trigger: "timer",
        event: { timestamp: Math.floor(tick / 1000), interval_seconds: timerIntervalSeconds(entry.timer) },
        minPosition: this.deps.projector.position,
        enqueuedMs: this.deps.clock.now(),
      });
    }
    const fired: TimerFired = { type: "TimerFired", data: { sourceId: entry.sourceId, tick, catchUp: !onTime } };
    try {
      const result = await this.deps.store.append(timerStream(entry.sourceId), [fired], {
        expectedRevision: entry.revision ?? "no_stream",
      });
      entry.revision = result.nextExpectedRevision;
      if (result.nextExpectedRevision > 0) await this.deps.store.truncateBefore(timerStream(entry.sourceId), result.nextExpectedRevision);
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      // Another scheduler recorded a tick first: take its view.
      const [latest] = await this.deps.store.readStream(timerStream(entry.sourceId), { direction: "backwards", maxCount: 1 });
      entry.revision = latest?.revision;
      tick = Math.max(tick, (latest?.data as TimerFired["data"] | undefined)?.tick ?? tick);
    }
    entry.last = tick;
    entry.next = entry.schedule.next(tick);
  }
}
