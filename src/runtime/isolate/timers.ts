// setTimeout and friends: the host keeps the clock, the isolate keeps the callbacks. Timers do not
// outlive the invocation that set them (the host clears them when the run ends).
import { host } from "./bridge.js";
import { MapPrototypeClear, MapPrototypeDelete, MapPrototypeGet, MapPrototypeSet, ReflectApply } from "./primordials.js";

interface TimerEntry {
  fn: (...args: unknown[]) => void;
  args: unknown[];
  interval: number | null;
}

const timers = new Map<number, TimerEntry>();
let nextId = 1;
let onUncaught: (err: unknown) => void = () => {};

export function setUncaughtHandler(fn: (err: unknown) => void): void {
  onUncaught = fn;
}

/** An error no caller can catch (a throwing event listener): reported as Node reports it, the run goes on. */
export function reportUncaught(err: unknown): void {
  onUncaught(err);
}

class Timeout {
  constructor(readonly id: number) {}
  ref() {
    return this;
  }
  unref() {
    return this;
  }
  hasRef() {
    return true;
  }
  refresh() {
    return this;
  }
  [Symbol.toPrimitive]() {
    return this.id;
  }
}

function arm(fn: unknown, ms: unknown, args: unknown[], interval: boolean): Timeout {
  if (typeof fn !== "function") throw new TypeError('The "callback" argument must be of type function');
  const delay = Math.max(interval ? 1 : 0, Math.min(2 ** 31 - 1, Number(ms) || 0));
  return new Timeout(armed(fn as (...a: unknown[]) => void, args, delay, interval));
}

/** A timer of the platform's own, set after the component's code ran: primordials only. */
function armed(fn: (...a: unknown[]) => void, args: unknown[], delay: number, interval: boolean): number {
  const id = nextId++;
  MapPrototypeSet(timers, id, { fn, args, interval: interval ? delay : null });
  host().timer("set", id, delay);
  return id;
}

/** The platform's one-off timer (the end of an invocation waiting for its requests); its id clears it. */
export function platformTimer(fn: () => void, delay: number): number {
  return armed(fn, [], delay, false);
}

function idOf(handle: unknown): number {
  return handle instanceof Timeout ? handle.id : Number(handle);
}

function clear(handle: unknown): void {
  const id = idOf(handle);
  if (MapPrototypeDelete(timers, id)) host().timer("clear", id, 0);
}

export const clearPlatformTimer: (id: number) => void = clear;

export const timerGlobals = {
  setTimeout: (fn: unknown, ms?: unknown, ...args: unknown[]) => arm(fn, ms, args, false),
  setInterval: (fn: unknown, ms?: unknown, ...args: unknown[]) => arm(fn, ms, args, true),
  setImmediate: (fn: unknown, ...args: unknown[]) => arm(fn, 0, args, false),
  clearTimeout: clear,
  clearInterval: clear,
  clearImmediate: clear,
  queueMicrotask: (fn: unknown) => {
    if (typeof fn !== "function") throw new TypeError('The "callback" argument must be of type function');
    Promise.resolve()
      .then(() => (fn as () => void)())
      .catch(onUncaught);
  },
};

/** Called by the host when timer `id` is due. */
export function fireTimer(id: number): void {
  const entry = MapPrototypeGet(timers, id);
  if (!entry) return;
  if (entry.interval !== null) host().timer("set", id, entry.interval);
  else MapPrototypeDelete(timers, id);
  try {
    // Not a spread: the array iterator is the component's to replace.
    ReflectApply(entry.fn, undefined, entry.args);
  } catch (err) {
    onUncaught(err);
  }
}

export function clearAllTimers(): void {
  MapPrototypeClear(timers);
}

export const timersModule = {
  ...timerGlobals,
  promises: {
    setTimeout: (ms?: number, value?: unknown) => new Promise((resolve) => arm(resolve, ms, [value], false)),
    setImmediate: (value?: unknown) => new Promise((resolve) => arm(resolve, 0, [value], false)),
  },
};
