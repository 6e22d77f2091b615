import type { SourcesReadModel, Source } from "../readModels/sources.js";
import type { ComponentCache } from "../components/componentCache.js";
import type { InvocationQueue } from "../runner/invocations.js";
import type { Projector } from "../projector/projector.js";
import type { QuotaGuard } from "../sources/quota.js";
import { timerIntervalSeconds, type TimerValue } from "../sources/configuredProps.js";
import type { EmitterStore } from "../../commands/emitters/emitterStore.js";
import type { TimerStore } from "../../commands/timers/timerStore.js";
import { timerInvocationId } from "../../commands/timers/timer.js";
import type { Clock } from "../ids.js";
import { tickSchedule, type TickSchedule } from "./ticks.js";
import type { Workflow, WorkflowsReadModel } from "../readModels/workflows.js";
import type { WorkflowRunQueue } from "../workflows/runner.js";
import { log } from "../observability/log.js";
import { withAdditionalProps } from "../components/additionalProps.js";

export interface SchedulerDeps {
  readonly timers: TimerStore;
  readonly emitters: EmitterStore;
  readonly sources: SourcesReadModel;
  readonly components: ComponentCache;
  readonly invocations: InvocationQueue;
  readonly projector: Projector;
  readonly quota: QuotaGuard;
  readonly clock: Clock;
  /** Workflows with a timer trigger fire the same way. */
  readonly workflows?: WorkflowsReadModel;
  readonly workflowRuns?: WorkflowRunQueue;
}

interface Entry {
  /** A source (dc_…) or a workflow (p_…). */
  readonly sourceId: string;
  readonly kind: "source" | "workflow";
  readonly timer: TimerValue;
  readonly schedule: TickSchedule;
  readonly propName: string;
  /** Scheduled time (ms) of the last fired tick, or the time counting starts from. */
  last: number;
  next: number;
  key: string;
}

/**
 * The scheduler role. Every node may run it: a tick's invocation id is derived from the source and
 * the tick, so a tick queued twice (two nodes, or a crash between queueing and recording) still
 * runs once. Queue first, record second: a crash never loses a tick, and a restart fires a missed
 * tick once (the newest one), not every tick it slept through.
 */
/** Events that may change which timers exist. */
const CHANGES = new Set(["SourceDeployed", "SourceUpdated", "SourceDeleted", "WorkflowDeployed", "WorkflowDeleted"]);

export class TimerScheduler {
  readonly #entries = new Map<string, Entry>();
  /** Every timer must be read again (at start). */
  #dirty = true;
  /** Sources and workflows whose deploys changed since the last tick: only these are read again. */
  readonly #changed = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #unsubscribe: (() => void) | undefined;

  constructor(private readonly deps: SchedulerDeps) {}

  start(): void {
    this.#unsubscribe = this.deps.projector.onApplied((events) => {
      let changed = false;
      for (const event of events) {
        if (!CHANGES.has(event.type)) continue;
        changed = true;
        const id = aggregateId(event.stream);
        if (id === undefined) this.#dirty = true;
        else this.#changed.add(id);
      }
      if (changed) this.#wake(0);
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
    this.#timer = setTimeout(
      () => {
        this.#running = (this.#running ?? Promise.resolve())
          .then(() => this.#tick())
          .catch((error) => {
            log.error({ err: error }, "scheduler: firing timers failed");
          })
          .finally(() => this.#wake(this.#delay()));
      },
      Math.max(0, delayMs),
    );
  }

  #delay(): number {
    const now = this.deps.clock.now();
    let soonest = now + 1000;
    for (const entry of this.#entries.values()) soonest = Math.min(soonest, entry.next);
    return Math.max(5, soonest - now);
  }

  /** Reads every timer: at start, or when a change could not be tied to one source or workflow. */
  async #refresh(): Promise<void> {
    this.#dirty = false;
    this.#changed.clear();
    const seen = new Set<string>();
    for (const source of this.deps.sources.active()) {
      const timer = this.#timerOf(source);
      if (!timer) continue;
      seen.add(source.id);
      await this.#keep(source.id, "source", timer.value, timer.name, source.updatedAt);
    }
    for (const workflow of this.deps.workflows?.timed() ?? []) {
      const value = workflowTimer(workflow);
      if (!value) continue;
      seen.add(workflow.id);
      await this.#keep(workflow.id, "workflow", value, "trigger", workflow.updatedAt);
    }
    for (const id of [...this.#entries.keys()]) if (!seen.has(id)) this.#entries.delete(id);
  }

  /**
   * Reads again only what changed: reading every active source on each deploy made deploying N
   * sources cost O(N²) (a deploy at 20,000 sources read 20,000 rows).
   */
  async #refreshChanged(): Promise<void> {
    const ids = [...this.#changed];
    this.#changed.clear();
    for (const id of ids) {
      const workflow = this.deps.workflows?.workflow(id);
      if (workflow) {
        const value = workflow.active ? workflowTimer(workflow) : undefined;
        if (value) await this.#keep(id, "workflow", value, "trigger", workflow.updatedAt);
        else this.#entries.delete(id);
        continue;
      }
      const source = this.deps.sources.source(id);
      const timer = source?.active ? this.#timerOf(source) : undefined;
      if (source && timer) await this.#keep(id, "source", timer.value, timer.name, source.updatedAt);
      else this.#entries.delete(id);
    }
  }

  /** Schedules a timer, keeping its entry (and so its next tick) when the timer did not change. */
  async #keep(id: string, kind: Entry["kind"], value: TimerValue, propName: string, updatedAt: number): Promise<void> {
    const key = JSON.stringify(value);
    const existing = this.#entries.get(id);
    if (existing && existing.key === key) return;
    const lastFired = await this.deps.timers.last(id);
    // Counting starts at the last fired tick or when the source was last changed (deployed, resumed,
    // its timer edited), whichever is later: a paused source does not catch up on its pause.
    const last = Math.max(updatedAt * 1000, lastFired.tick ?? 0);
    const schedule = tickSchedule(value);
    this.#entries.set(id, { sourceId: id, kind, timer: value, schedule, propName, last, key, next: schedule.next(last) });
  }

  #timerOf(source: Source): { name: string; value: TimerValue } | undefined {
    const component = this.deps.components.get(source.componentId);
    const prop =
      component && withAdditionalProps(component.meta.component.props, source.additionalProps).find((p) => p.type === "$.interface.timer");
    if (!prop) return undefined;
    const value = source.configuredProps[prop.name] as TimerValue | undefined;
    return value ? { name: prop.name, value } : undefined;
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    if (this.#dirty) await this.#refresh();
    else if (this.#changed.size > 0) await this.#refreshChanged();
    const now = this.deps.clock.now();
    for (const entry of this.#entries.values()) {
      if (entry.next > now) continue;
      const tick = entry.schedule.due(entry.last, now);
      if (tick === undefined) continue;
      await this.#fire(entry, tick, tick === entry.schedule.next(entry.last));
    }
  }

  async #fire(entry: Entry, tick: number, onTime: boolean): Promise<void> {
    const target = entry.kind === "workflow" ? this.deps.workflows?.workflow(entry.sourceId) : this.deps.sources.source(entry.sourceId);
    if (!target || !target.active) return;
    const source = { id: target.id, creatorId: target.creatorId };
    // Another scheduler may have recorded this tick (or a later one) already: then it is not queued again.
    const recorded = await this.deps.timers.last(entry.sourceId);
    if (recorded.tick !== undefined && recorded.tick >= tick) {
      entry.last = recorded.tick;
      entry.next = entry.schedule.next(recorded.tick);
      return;
    }
    const invocationId = timerInvocationId(entry.sourceId, tick);
    const refused = this.deps.quota.exceeded(source.creatorId);
    if (refused) {
      // The tick is skipped, and the source's $errors channel says why.
      await this.deps.emitters
        .record({
          emitterId: source.id,
          invocationId,
          strategy: undefined,
          emits: [],
          unconditional: [
            {
              event: {
                error: { name: "QuotaExceeded", message: `timer tick skipped: ${refused}` },
                original_event: { timestamp: Math.floor(tick / 1000) },
              },
              meta: { name: "$errors", summary: "timer tick skipped: quota exceeded" },
            },
          ],
          db: (await this.deps.emitters.load(source.id)).state.db,
          dbChanged: false,
          startedMs: tick,
          nowMs: this.deps.clock.now(),
        })
        .catch(() => undefined);
    } else {
      const run = {
        invocationId,
        trigger: "timer" as const,
        event: { timestamp: Math.floor(tick / 1000), interval_seconds: timerIntervalSeconds(entry.timer) },
        minPosition: this.deps.projector.position,
        enqueuedMs: this.deps.clock.now(),
      };
      if (entry.kind === "workflow") await this.deps.workflowRuns?.submit({ ...run, workflowId: entry.sourceId });
      else await this.deps.invocations.submit({ ...run, sourceId: entry.sourceId });
    }
    // Another scheduler may record a newer tick first: take its view.
    const newest = await this.deps.timers.record({ sourceId: entry.sourceId, tick, catchUp: !onTime });
    entry.last = newest;
    entry.next = entry.schedule.next(newest);
  }
}

/** The source or workflow an event of its own stream belongs to (`source-dc_…`, `workflow-p_…`). */
function aggregateId(stream: string): string | undefined {
  for (const prefix of ["source-", "workflow-"]) if (stream.startsWith(prefix)) return stream.slice(prefix.length);
  return undefined;
}

function workflowTimer(workflow: Workflow): TimerValue | undefined {
  const trigger = workflow.trigger;
  if (trigger.type !== "timer") return undefined;
  return "cron" in trigger
    ? { cron: trigger.cron, ...(trigger.timezone !== undefined ? { timezone: trigger.timezone } : {}) }
    : { intervalSeconds: trigger.intervalSeconds };
}
