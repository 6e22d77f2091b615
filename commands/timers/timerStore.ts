import type { EventStore } from "../../src/store/eventStore.js";
import { decideAndAppend, type HandleOptions } from "../handler.js";
import { streams } from "../streams.js";
import { recordTick, type RecordTick, type TimerFired } from "./timer.js";

export interface TimerLast {
  /** The newest recorded tick (epoch ms), if any. */
  readonly tick: number | undefined;
  readonly revision: number | undefined;
}

/** A source's timer stream keeps only its newest TimerFired: the tick the scheduler counts from. */
export class TimerStore {
  constructor(private readonly store: EventStore) {}

  async last(sourceId: string): Promise<TimerLast> {
    const [recorded] = await this.store.readStream(streams.timer(sourceId), { direction: "backwards", maxCount: 1 });
    return { tick: (recorded?.data as TimerFired["data"] | undefined)?.tick, revision: recorded?.revision };
  }

  /** Records the tick unless a newer one was (another scheduler's); answers the newest tick recorded. */
  async record(command: RecordTick, options: HandleOptions = {}): Promise<number> {
    let newest = command.tick;
    const appended = await decideAndAppend(
      this.store,
      () => this.last(command.sourceId),
      (last) => {
        newest = Math.max(command.tick, last.tick ?? command.tick);
        const events = recordTick(command, { lastTick: last.tick });
        return { stream: streams.timer(command.sourceId), events, expectedRevision: last.revision ?? "no_stream" };
      },
      options,
    );
    if (appended.revision !== undefined && appended.revision > 0)
      await this.store.truncateBefore(streams.timer(command.sourceId), appended.revision);
    return newest;
  }
}
