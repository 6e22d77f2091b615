import { Cron } from "croner";
import { cronOptions, type TimerValue } from "../sources/configuredProps.js";

/** When a timer's ticks fall (epoch ms, whole seconds): interval ticks count from `last`, cron ticks in its zone (UTC by default). */
export interface TickSchedule {
  /** The first tick strictly after `after`, or +Infinity when there is none. */
  next(after: number): number;
  /**
   * The newest tick due at `now` after `last` (one catch-up fire however many were missed), or
   * undefined when none is due yet.
   */
  due(last: number, now: number): number | undefined;
}

export function tickSchedule(timer: TimerValue): TickSchedule {
  if ("intervalSeconds" in timer) {
    const step = timer.intervalSeconds * 1000;
    return {
      next: (after) => after + step,
      due: (last, now) => (now < last + step ? undefined : last + Math.floor((now - last) / step) * step),
    };
  }
  // One parsed pattern per timer: croner takes about half a millisecond per call, parsing included.
  const cron = new Cron(timer.cron, cronOptions(timer));
  const next = (after: number) => cron.nextRun(new Date(after))?.getTime() ?? Number.POSITIVE_INFINITY;
  return {
    next,
    due(last, now) {
      if (next(last) > now) return undefined;
      // previousRuns finds ticks strictly before its reference second: from the next second, the newest at or before now.
      // One lookup however long the downtime, where stepping forward tick by tick grows with it.
      let newest: number | undefined;
      try {
        newest = cron.previousRuns(1, new Date(Math.floor(now / 1000) * 1000 + 1000))[0]?.getTime();
      } catch {
        newest = undefined;
      }
      if (newest === undefined || newest > now || newest <= last) return next(last);
      return newest;
    },
  };
}
