// setTimeout and friends: the host keeps the clock, the isolate keeps the callbacks. Timers do not
// outlive the invocation that set them (the host clears them when the run ends).
import { host } from "./bridge.js";
import { MapPrototypeClear, ReflectApply } from "./primordials.js";

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
  const id = nextId++;
  timers.set(id, { fn: fn as (...a: unknown[]) => void, args, interval: interval ? delay : null });
  host().timer("set", id, delay);
  return new Timeout(id);
}

function idOf(handle: unknown): number {
  return handle instanceof Timeout ? handle.id : Number(handle);
}

function clear(handle: unknown): void {
  const id = idOf(handle);
  if (timers.delete(id)) host().timer("clear", id, 0);
}

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
  const entry = timers.get(id);
  if (!entry) return;
  if (entry.interval !== null) host().timer("set", id, entry.interval);
  else timers.delete(id);
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
