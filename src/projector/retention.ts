import type { EventStore } from "../store/eventStore.js";
import type { Projector } from "./projector.js";
import type { SourcesReadModel } from "../readModels/sources.js";
import { emitterStream } from "../../commands/emitters/emitter.js";
import { logsStream } from "../../commands/emitters/runLog.js";
import { KEPT_EVENTS } from "../../projections/emittedEvents.js";
import { KEPT_RUN_LOGS } from "../../projections/sourceLogs.js";

/**
 * Keeps storage bounded: once the read models hold an emitter's newest 100 events (or run logs),
 * the log drops everything older in that stream. The read models' window is exactly what stays,
 * so a rebuild from the truncated log gives the same answers; a lagging projector elsewhere only
 * skips events that fall outside the window anyway.
 */
export class Retention {
  readonly #pending = new Set<string>();
  readonly #truncated = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly projector: Projector,
    private readonly sources: SourcesReadModel,
    private readonly intervalMs = 1000,
  ) {}

  start(): void {
    this.#unsubscribe = this.projector.onApplied((events) => {
      for (const event of events) {
        if (event.type === "EventEmitted" || event.type === "RunLogged") this.#pending.add(event.stream);
      }
      if (this.#pending.size > 0 && !this.#timer) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#running = this.#running.then(() => this.#sweep()).catch((error) => console.error("retention:", error));
        }, this.intervalMs);
      }
    });
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  async #sweep(): Promise<void> {
    const streams = [...this.#pending];
    this.#pending.clear();
    for (const stream of streams) {
      const emitter = stream.startsWith("emitter-") ? stream.slice("emitter-".length) : undefined;
      const logsOf = stream.startsWith("logs-") ? stream.slice("logs-".length) : undefined;
      const kept = emitter
        ? withLimit(this.sources.oldestKeptRevision(emitter), KEPT_EVENTS)
        : logsOf
          ? withLimit(this.sources.oldestKeptLogRevision(logsOf), KEPT_RUN_LOGS)
          : undefined;
      if (kept === undefined || kept <= (this.#truncated.get(stream) ?? 0)) continue;
      await this.store.truncateBefore(emitter ? emitterStream(emitter) : logsStream(logsOf!), kept);
      this.#truncated.set(stream, kept);
    }
  }
}

/** The revision to truncate before, once the window is full. */
function withLimit(oldest: { revision: number; count: number } | undefined, limit: number): number | undefined {
  return oldest && oldest.count >= limit ? oldest.revision : undefined;
}
