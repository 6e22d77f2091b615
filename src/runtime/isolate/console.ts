// console.* captured for the source's logs, within the per-invocation line and byte budget.
import { host } from "./bridge.js";
import { current } from "./invocationState.js";
import { cut } from "./primordials.js";

type Util = typeof import("./modules/util.js");
let utilModule: Util | undefined;
/**
 * util is loaded on the first line that needs formatting, not with the prelude: most runs never
 * format a value, and loading it is a noticeable part of a fresh context's setup (the prelude
 * bundle turns this require into a lazily run module).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the bundle runs a required module on first use
const util = (): Util => (utilModule ??= require("./modules/util.js") as Util);

function write(level: string, args: unknown[]): void {
  const s = current();
  const { maxLogLines, maxLogBytes, maxLogLineChars } = s.limits;
  if (s.logLines >= maxLogLines || s.logBytes >= maxLogBytes) {
    s.droppedLogLines++;
    return;
  }
  let message: string;
  // One string is printed as it is (as Node does), without format's string methods.
  if (args.length === 1 && typeof args[0] === "string") message = args[0];
  else {
    try {
      message = util().format(...args);
    } catch (err) {
      message = `[unprintable value: ${String((err as Error)?.message ?? err)}]`;
    }
  }
  if (message.length > maxLogLineChars) {
    message = `${cut(message, maxLogLineChars)}… [line cut: ${message.length} characters]`;
  }
  if (s.logBytes + message.length > maxLogBytes) {
    s.droppedLogLines++;
    return;
  }
  s.logLines++;
  s.logBytes += message.length;
  host().log(level, message);
}

const counters = new Map<string, number>();
const timersByLabel = new Map<string, number>();

export const sandboxConsole = {
  log: (...a: unknown[]) => write("log", a),
  info: (...a: unknown[]) => write("info", a),
  warn: (...a: unknown[]) => write("warn", a),
  error: (...a: unknown[]) => write("error", a),
  debug: (...a: unknown[]) => write("debug", a),
  trace: (...a: unknown[]) =>
    write("debug", [
      ...a,
      "\n" +
        String(new Error("Trace").stack ?? "")
          .split("\n")
          .slice(2)
          .join("\n"),
    ]),
  dir: (v: unknown, opts?: { depth?: number }) => write("log", [util().inspect(v, opts)]),
  table: (v: unknown) => write("log", [util().inspect(v, { depth: 3 })]),
  assert: (cond: unknown, ...a: unknown[]) => {
    if (!cond) write("error", ["Assertion failed" + (a.length ? ":" : ""), ...a]);
  },
  count: (label = "default") => {
    const n = (counters.get(label) ?? 0) + 1;
    counters.set(label, n);
    write("log", [`${label}: ${n}`]);
  },
  countReset: (label = "default") => counters.delete(label),
  time: (label = "default") => timersByLabel.set(label, Date.now()),
  timeEnd: (label = "default") => {
    const start = timersByLabel.get(label);
    timersByLabel.delete(label);
    if (start !== undefined) write("log", [`${label}: ${Date.now() - start}ms`]);
  },
  timeLog: (label = "default", ...a: unknown[]) => {
    const start = timersByLabel.get(label);
    if (start !== undefined) write("log", [`${label}: ${Date.now() - start}ms`, ...a]);
  },
  group: (...a: unknown[]) => (a.length ? write("log", a) : undefined),
  groupCollapsed: (...a: unknown[]) => (a.length ? write("log", a) : undefined),
  groupEnd: () => undefined,
};

/** A warning from the platform about the component's use of an API, within the same budget. */
export function systemWarning(message: string): void {
  write("warn", [message]);
}
