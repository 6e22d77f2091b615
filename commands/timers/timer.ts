import type { DomainEvent } from "../decider.js";

/** Recorded in timer-<source id> (the newest one kept) once a tick's invocation is queued. */
export type TimerFired = DomainEvent<"TimerFired", { sourceId: string; tick: number; catchUp: boolean }>;

export interface TimerState {
  /** Scheduled time (epoch ms) of the newest recorded tick. */
  readonly lastTick: number | undefined;
}

export interface RecordTick {
  readonly sourceId: string;
  readonly tick: number;
  readonly catchUp: boolean;
}

/** Deterministic per tick: two schedulers firing one tick make one invocation, which runs once. */
export const timerInvocationId = (sourceId: string, tick: number) => `inv_${sourceId}_${tick}`;

/** A tick is recorded once and never behind a newer one (another scheduler may have recorded it first). */
export function recordTick(command: RecordTick, state: TimerState): TimerFired[] {
  if (state.lastTick !== undefined && command.tick <= state.lastTick) return [];
  return [{ type: "TimerFired", data: { ...command } }];
}
