import type { EventStore, RecordedEvent } from "../store/eventStore.js";
import type { Projector } from "./projector.js";
import type { EmittedEventsReadModel } from "../readModels/emittedEvents.js";
import type { RunLogsReadModel } from "../readModels/runLogs.js";
import type { EventEmitted } from "../../commands/emitters/emitter.js";
import type { RunLogged } from "../../commands/runLogs/runLog.js";
import { streams } from "../../commands/streams.js";
import { KEPT_EVENTS } from "../../projections/emittedEvents.js";
import { KEPT_RUN_LOGS } from "../../projections/runLogs.js";
import { log } from "../observability/log.js";

type Kept = { kind: "events" | "logs"; emitterId: string };

/**
 * Keeps storage bounded: once the read models hold an emitter's newest 100 events (or run logs),
 * the log drops everything older in that stream. The read models' window is exactly what stays,
 * so a rebuild from the truncated log gives the same answers; a lagging projector elsewhere only
 * skips events that fall outside the window anyway.
 */
export class Retention {
  readonly #pending = new Map<string, Kept>();
  readonly #truncated = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #unsubscribe: (() => void) | undefined;
  #stopped = false;

  constructor(
    private readonly store: EventStore,
    private readonly projector: Projector,
    private readonly readModels: {
      events: Pick<EmittedEventsReadModel, "oldestKeptRevision" | "fullEmitters">;
      runLogs: Pick<RunLogsReadModel, "oldestKeptRevision" | "fullSources">;
    },
    /** How far the router has turned the log into deliveries: nothing past it is dropped. */
    private readonly routedUpTo: () => Promise<number>,
    /** Whether anything listens to the emitter's events: only then must the router pass them first. */
    private readonly listened: (emitterId: string) => boolean,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    // What a previous run left for later (the router had not passed it yet) is looked at again.
    for (const emitterId of this.readModels.events.fullEmitters(KEPT_EVENTS)) this.#mark({ kind: "events", emitterId });
    for (const emitterId of this.readModels.runLogs.fullSources(KEPT_RUN_LOGS)) this.#mark({ kind: "logs", emitterId });
    this.#again();
    this.#unsubscribe = this.projector.onApplied((events) => {
      for (const event of events) {
        if (event.type === "EventEmitted") {
          const emitterId = (event.data as EventEmitted["data"]).emitterId;
          if (!youngStream(event, streams.emitter(emitterId), KEPT_EVENTS)) this.#mark({ kind: "events", emitterId });
        } else if (event.type === "RunLogged") {
          const emitterId = (event.data as RunLogged["data"]).sourceId;
          if (!youngStream(event, streams.runLogs(emitterId), KEPT_RUN_LOGS)) this.#mark({ kind: "logs", emitterId });
        }
      }
      this.#again();
    });
  }

  /** A sweep soon, if anything waits for one. */
  #again(): void {
    if (this.#stopped || this.#pending.size === 0 || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#running
        .then(() => this.#sweep())
        .catch((error: unknown) => log.error({ err: error }, "retention failed"))
        .finally(() => this.#again());
    }, this.intervalMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  #mark(kept: Kept): void {
    this.#pending.set(`${kept.kind}:${kept.emitterId}`, kept);
  }

  async #sweep(): Promise<void> {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    const routed = await this.routedUpTo();
    // Asked for together: a store writes them as one commit (SQLite), or at once (the others).
    const truncations: Promise<void>[] = [];
    for (const { kind, emitterId } of pending) {
      const [stream, before] =
        kind === "events"
          ? [streams.emitter(emitterId), withLimit(this.readModels.events.oldestKeptRevision(emitterId), KEPT_EVENTS)]
          : [streams.runLogs(emitterId), withLimit(this.readModels.runLogs.oldestKeptRevision(emitterId), KEPT_RUN_LOGS)];
      if (before === undefined || before <= (this.#truncated.get(stream) ?? 0)) continue;
      // Subscribers get every event: the router must have passed what is dropped (else try again later).
      if (this.listened(emitterId)) {
        const [newestDropped] = await this.store.readStream(stream, { fromRevision: before - 1, maxCount: 1 });
        if (newestDropped && newestDropped.position > routed) {
          this.#mark({ kind, emitterId });
          continue;
        }
      }
      truncations.push(this.store.truncateBefore(stream, before).then(() => void this.#truncated.set(stream, before)));
    }
    const failed = (await Promise.allSettled(truncations)).find((outcome) => outcome.status === "rejected");
    if (failed) throw failed.reason;
  }
}

/**
 * Whether the event's stream has held fewer than `limit` events in all (its revisions count every
 * event ever appended to it, truncated ones too): its window cannot be full, so there is nothing to
 * sweep. Most sources never get there, and a busy node's sweep would otherwise query each of them
 * once a second.
 */
function youngStream(event: RecordedEvent, stream: string, limit: number): boolean {
  return event.stream === stream && event.revision + 1 < limit;
}

/** The revision to truncate before, once the window is full. */
function withLimit(oldest: { revision: number; count: number } | undefined, limit: number): number | undefined {
  return oldest && oldest.count >= limit ? oldest.revision : undefined;
}
