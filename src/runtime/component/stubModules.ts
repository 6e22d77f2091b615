// Node modules the sandbox cannot offer (sockets, processes, threads, the engine's internals), as
// npm packages see them: many import one at the top for a path they seldom take (a proxy agent's
// `net` and `tls`, an HTTP/2 client, a DNS cache, a diagnostics channel), and failing the save for
// that kept whole SDKs out. A package gets a module of the same names whose functions and classes
// throw ERR_FEATURE_UNAVAILABLE_ON_PLATFORM, naming what was called, when it is used; its constants
// are the host's; the few pure parts (net.isIP, tty.isatty, diagnostics_channel) work. Component
// code importing one of these still fails its save, naming the module: there the intent is plain.
import { createRequire } from "node:module";

const hostRequire = createRequire(import.meta.url);

/** Why each module is missing, as its functions say when called. */
const REASONS: Record<string, string> = {
  net: "the sandbox has no sockets (make HTTP requests with fetch, axios, http or https)",
  tls: "the sandbox has no sockets (make HTTPS requests with fetch, axios or https)",
  dgram: "the sandbox has no sockets",
  dns: "the sandbox resolves names only inside its HTTP requests",
  "dns/promises": "the sandbox resolves names only inside its HTTP requests",
  http2: "the sandbox makes HTTP/1.1 requests only (fetch, axios, http, https)",
  child_process: "the sandbox has no processes",
  cluster: "the sandbox has no processes",
  worker_threads: "the sandbox has no threads",
  async_hooks: "the sandbox does not expose the engine's internals",
  vm: "the sandbox does not expose the engine's internals",
  v8: "the sandbox does not expose the engine's internals",
  inspector: "the sandbox does not expose the engine's internals",
  module: "the sandbox loads only the modules bundled when the component was saved",
  tty: "the sandbox has no terminal",
  readline: "the sandbox has no terminal",
  "readline/promises": "the sandbox has no terminal",
  diagnostics_channel: "",
  domain: "the sandbox has no domains (deprecated in Node)",
};

/** The built-ins an npm package may import and get a stub of. */
export const STUBBED_BUILTINS: ReadonlySet<string> = new Set(Object.keys(REASONS));

/** Parts that work in the sandbox, as source text of properties (after the stubs, so they win), by module. */
const WORKING: Record<string, string> = {
  net: `
  ...(() => {
    const isIPv4 = (input) =>
      typeof input === "string" && /^(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}$/.test(input);
    const isIPv6 = (input) => {
      if (typeof input !== "string" || !input.includes(":") || /[\\[\\]\\/?#@\\s]/.test(input)) return false;
      try { new URL("http://[" + input + "]/"); return true; } catch { return false; }
    };
    return { isIPv4, isIPv6, isIP: (input) => (isIPv4(input) ? 4 : isIPv6(input) ? 6 : 0) };
  })(),`,
  tty: `
  isatty: () => false,`,
  // A working channel registry: packages publish to it, and subscribers (if the component adds
  // any) hear them. Nothing of the platform subscribes.
  diagnostics_channel: `
  ...(() => {
    const channels = new Map();
    class Channel {
      constructor(name) { this.name = name; this._subscribers = []; this._stores = new Map(); }
      get hasSubscribers() { return this._subscribers.length > 0; }
      subscribe(fn) { this._subscribers.push(fn); }
      unsubscribe(fn) { const i = this._subscribers.indexOf(fn); if (i < 0) return false; this._subscribers.splice(i, 1); return true; }
      publish(message) { for (const fn of [...this._subscribers]) fn(message, this.name); }
      bindStore(store, transform) { this._stores.set(store, transform); }
      unbindStore(store) { return this._stores.delete(store); }
      runStores(context, fn, thisArg, ...args) { this.publish(context); return fn.apply(thisArg, args); }
    }
    const channel = (name) => { let c = channels.get(name); if (!c) { c = new Channel(name); channels.set(name, c); } return c; };
    const tracingChannel = (name) => {
      const of = (event) => typeof name === "string" ? channel("tracing:" + name + ":" + event) : name[event];
      const t = { start: of("start"), end: of("end"), asyncStart: of("asyncStart"), asyncEnd: of("asyncEnd"), error: of("error") };
      return Object.assign(t, {
        get hasSubscribers() { return Object.values(t).some((c) => c && c.hasSubscribers); },
        subscribe(handlers) { for (const k of Object.keys(handlers)) t[k].subscribe(handlers[k]); },
        unsubscribe(handlers) { let all = true; for (const k of Object.keys(handlers)) all = t[k].unsubscribe(handlers[k]) && all; return all; },
        traceSync(fn, context = {}, thisArg, ...args) {
          t.start.publish(context);
          try { const result = fn.apply(thisArg, args); context.result = result; return result; }
          catch (error) { context.error = error; t.error.publish(context); throw error; }
          finally { t.end.publish(context); }
        },
        tracePromise(fn, context = {}, thisArg, ...args) {
          t.start.publish(context);
          try {
            return Promise.resolve(fn.apply(thisArg, args)).then(
              (result) => { context.result = result; t.asyncStart.publish(context); t.asyncEnd.publish(context); return result; },
              (error) => { context.error = error; t.error.publish(context); t.asyncStart.publish(context); t.asyncEnd.publish(context); throw error; });
          } finally { t.end.publish(context); }
        },
        traceCallback(fn, position = -1, context = {}, thisArg, ...args) { return t.traceSync(fn, context, thisArg, ...args); },
      });
    };
    return {
      Channel, channel, tracingChannel,
      hasSubscribers: (name) => channels.has(name) && channels.get(name).hasSubscribers,
      subscribe: (name, fn) => channel(name).subscribe(fn),
      unsubscribe: (name, fn) => channels.has(name) && channels.get(name).unsubscribe(fn),
    };
  })(),`,
};

/** A value of the host's module as a stub's source text: functions throw, data is copied, the rest left out. */
function stubValue(path: string, value: unknown, depth: number): string | undefined {
  if (typeof value === "function") return `unavailable(${JSON.stringify(path)})`;
  if (value === null || typeof value !== "object") {
    return typeof value === "symbol" || typeof value === "bigint" || value === undefined ? undefined : JSON.stringify(value);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.some(([, v]) => typeof v === "function")) {
    if (depth >= 1) return undefined;
    const props = entries.flatMap(([k, v]) => {
      const text = stubValue(`${path}.${k}`, v, depth + 1);
      return text === undefined ? [] : [`${JSON.stringify(k)}: ${text}`];
    });
    return `{ ${props.join(", ")} }`;
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined;
  }
  // Large data (tls.rootCertificates) is of no use without the module's functions.
  return text !== undefined && text.length <= 16_384 ? text : Array.isArray(value) ? "[]" : undefined;
}

/** The source of the stub of `name` (one of STUBBED_BUILTINS), built from the host's module of that name. */
export function stubModuleSource(name: string): string {
  const reason = REASONS[name];
  const host = hostRequire(`node:${name}`) as Record<string, unknown>;
  const working = WORKING[name] ?? "";
  const props: string[] = [];
  for (const key of Object.keys(host)) {
    // Private fields, and the host's module search paths (nothing of the host's files goes in).
    if (key === "default" || key.startsWith("_") || key === "globalPaths") continue;
    let value: unknown;
    try {
      value = host[key];
    } catch {
      continue;
    }
    const text = stubValue(`${name}.${key}`, value, 0);
    if (text !== undefined) props.push(`  ${JSON.stringify(key)}: ${text},`);
  }
  return `"use strict";
function unavailable(what) {
  function stub() {
    const error = new Error(what + " is not available in the sandbox: " + ${JSON.stringify(reason)});
    error.code = "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM";
    throw error;
  }
  Object.defineProperty(stub, "name", { value: what.slice(what.lastIndexOf(".") + 1) });
  return stub;
}
const stubbed = {
${props.join("\n")}
${working}
};
module.exports = stubbed;
`;
}
