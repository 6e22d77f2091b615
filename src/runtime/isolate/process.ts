// The `process` global (and the "process" module) components and npm packages expect: a sandbox
// object, never the host's. Its env holds only what the platform documents for components.
import EventEmitter from "events";
import { sandboxConsole, systemWarning } from "./console.js";
import { PromiseCtor } from "./primordials.js";

/** The Node version the runner children run (replaced when the prelude is built). */
declare const __HW_NODE_VERSION__: string;
const NODE_VERSION = typeof __HW_NODE_VERSION__ === "string" ? __HW_NODE_VERSION__ : "v20.0.0";

/**
 * Pipedream documents no environment variables for components (they "are not accessible within
 * sources or actions"); published components still test PD_COMPONENT to know they run as one.
 * NODE_ENV matches what bundles are built with; TMPDIR is the per-run /tmp.
 */
export function componentEnv(): Record<string, string> {
  return { PD_COMPONENT: "1", NODE_ENV: "production", TMPDIR: "/tmp" };
}

const started = Date.now();

function hrtime(previous?: [number, number]): [number, number] {
  const ms = Date.now() - started;
  let seconds = Math.floor(ms / 1000);
  let nanos = Math.round((ms - seconds * 1000) * 1e6);
  if (previous) {
    seconds -= previous[0];
    nanos -= previous[1];
    if (nanos < 0) {
      seconds--;
      nanos += 1e9;
    }
  }
  return [seconds, nanos];
}
hrtime.bigint = (): bigint => BigInt(Math.round((Date.now() - started) * 1e6));

const resolved = PromiseCtor.resolve();

function nextTick(fn: unknown, ...args: unknown[]): void {
  if (typeof fn !== "function") throw new TypeError('The "callback" argument must be of type function');
  // Before timers, as Node runs ticks; after the current synchronous code.
  void resolved.then(() => (fn as (...a: unknown[]) => void)(...args));
}

function emitWarning(warning: unknown, type?: unknown): void {
  const text = warning instanceof Error ? `${warning.name}: ${warning.message}` : String(warning);
  systemWarning(`${typeof type === "string" ? type : "Warning"}: ${text}`);
}

function unavailable(name: string) {
  return () => {
    throw new Error(`process.${name}() is not available in the sandbox`);
  };
}

const emitter = new EventEmitter();

export const sandboxProcess = Object.assign(emitter, {
  env: componentEnv(),
  argv: ["/usr/local/bin/node", "/tmp/component.js"],
  argv0: "node",
  execArgv: [] as string[],
  execPath: "/usr/local/bin/node",
  exitCode: undefined as number | undefined,
  version: NODE_VERSION,
  versions: { node: NODE_VERSION.replace(/^v/, "") },
  release: { name: "node" },
  platform: "linux",
  arch: "x64",
  pid: 1,
  ppid: 0,
  title: "headwater-component",
  browser: false,
  config: { variables: {} },
  features: {},
  cwd: () => "/tmp",
  chdir: unavailable("chdir"),
  umask: () => 0o022,
  uptime: () => (Date.now() - started) / 1000,
  hrtime,
  nextTick,
  emitWarning,
  memoryUsage: Object.assign(() => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }), { rss: () => 0 }),
  cpuUsage: () => ({ user: 0, system: 0 }),
  getuid: () => 1000,
  getgid: () => 1000,
  geteuid: () => 1000,
  getegid: () => 1000,
  exit: unavailable("exit"),
  abort: unavailable("abort"),
  kill: unavailable("kill"),
  binding: unavailable("binding"),
  dlopen: unavailable("dlopen"),
  stdout: { write: (s: unknown) => (sandboxConsole.log(String(s).replace(/\n$/, "")), true), isTTY: false },
  stderr: { write: (s: unknown) => (sandboxConsole.error(String(s).replace(/\n$/, "")), true), isTTY: false },
  stdin: { isTTY: false },
});
// Node's own tag: libraries (axios 0.x choosing its adapter, UMD builds) detect Node by
// Object.prototype.toString.call(process) === "[object process]".
Object.defineProperty(sandboxProcess, Symbol.toStringTag, { value: "process", configurable: true });
