// Entry of the prelude script that every isolate runs before the component: it takes the host
// bridge, installs the globals a component expects (console, timers, URL, TextEncoder, Buffer,
// fetch, crypto.getRandomValues, and the web classes Node 20 has: Event, EventTarget, streams, Blob,
// FormData, MessageChannel, ...) and the module registry, then exposes load / invoke / describe /
// dispatch to the host through one global the host removes right away.
//
// What a run always needs (the bridge, console, timers, emit, db, invoke) is set up here. The
// rest (Buffer, events, util, URL, fetch, axios, crypto, process, ...) is made on first use: a
// global is an accessor that replaces itself with the value, a module of the registry a getter.
// Most runs touch few of them, and making them all was most of a fresh context's setup
// (bench/results/runtime.md). The prelude bundle turns each `require` below into a module run
// on its first call, once (an `import` would run the module when the prelude starts).
/* eslint-disable @typescript-eslint/no-require-imports -- see above: require is what makes a module lazy in the bundle */
import { host, setBridge, takeBridge } from "./bridge.js";
import { exportedComponent, isRecord, type AnyRecord } from "./component.js";
import { sandboxConsole } from "./console.js";
import { describeComponent } from "./describe.js";
import { HttpBridgeError, hostRequest, settleHttp } from "./http.js";
import { awaitRun, errorFields, invoke, loadResultJson, type InvokeTmp, type PlatformFailure } from "./invoke.js";
import { ObjectDefineProperty, objectKeys, StringPrototypeSlice, stringify } from "./primordials.js";
import * as types from "./modules/types.js";
import { tmpStore } from "./tmpStore.js";
import { fireTimer, setUncaughtHandler, timerGlobals, timersModule } from "./timers.js";
import { WEB_STREAM_NAMES } from "./webStreamNames.js";

/** `make()` once, on first use; the same value after. */
function once<T>(make: () => T): () => T {
  let made = false;
  let value: T;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

const bufferLib = once(() => require("buffer") as typeof import("buffer"));
const EventEmitter = once(() => require("events") as typeof import("events"));
const fetchLib = once(() => require("./fetch.js") as typeof import("./fetch.js"));
const cryptoModule = once(() => require("./modules/crypto.js") as typeof import("./modules/crypto.js"));
const urlLib = once(() => require("./url.js") as typeof import("./url.js"));
const textCodec = once(() => require("./textCodec.js") as typeof import("./textCodec.js"));
const domEvents = once(() => require("./domEvents.js") as typeof import("./domEvents.js"));
const streams = once(() => require("./streams.js") as typeof import("./streams.js"));
const blobLib = once(() => require("./blob.js") as typeof import("./blob.js"));
const messageChannel = once(() => require("./messageChannel.js") as typeof import("./messageChannel.js"));
const sandboxProcess = once(() => (require("./process.js") as typeof import("./process.js")).sandboxProcess);
setBridge(takeBridge());
setUncaughtHandler((err) => sandboxConsole.error("Uncaught exception:", err));

const g = globalThis as unknown as AnyRecord;

/**
 * Bundling renames a class or function whose name clashes with another module's (`Buffer7`,
 * `_URL`): what the prelude exposes gets back the name it is exposed under, as in Node, where
 * libraries test `constructor.name === "Buffer"`. Only such renames are undone. This may run
 * after component code (lazy globals and modules), so primordials only, and a descriptor without
 * a prototype (a poisoned Object.prototype.get cannot make it invalid).
 */
function ownName(value: unknown, name: string): void {
  if (typeof value !== "function" || value.name === name) return;
  const given = value.name;
  const core = given[0] === "_" ? StringPrototypeSlice(given, 1) : given;
  if (StringPrototypeSlice(core, 0, name.length) !== name) return;
  for (let i = name.length; i < core.length; i++) if (!(core[i] >= "0" && core[i] <= "9")) return;
  ObjectDefineProperty(value, "name", { __proto__: null, value: name, configurable: true } as PropertyDescriptor);
}

/** A module's exports (and its default export's) named as they are exported. */
function ownNames(exports: unknown): unknown {
  // A module may be a function with its exports on it (events: the EventEmitter class).
  if ((typeof exports !== "object" && typeof exports !== "function") || exports === null) return exports;
  for (const key of objectKeys(exports)) {
    const value: unknown = (exports as AnyRecord)[key];
    ownName(value, key);
    if (key === "default" && value !== exports) ownNames(value);
  }
  return exports;
}

function defineGlobal(name: string, value: unknown): void {
  ownName(value, name);
  Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
}

/** A global made on first read (or replaced by a write before it), then an ordinary writable one. */
function defineLazyGlobal(name: string, make: () => unknown): void {
  Object.defineProperty(g, name, {
    get() {
      const value = make();
      defineGlobal(name, value);
      return value;
    },
    set(value: unknown) {
      defineGlobal(name, value);
    },
    enumerable: false,
    configurable: true,
  });
}

// The global `crypto` is node:crypto's `webcrypto`, as in Node: getRandomValues, randomUUID, subtle.
const webCrypto = () => cryptoModule().webcrypto;
const subtleLib = once(() => require("./subtle.js") as typeof import("./subtle.js"));
const performance = {
  now: (() => {
    const t0 = Date.now();
    return () => Date.now() - t0;
  })(),
  timeOrigin: Date.now(),
};
const atob = (s: string) => bufferLib().Buffer.from(String(s), "base64").toString("latin1");
const btoa = (s: string) => bufferLib().Buffer.from(String(s), "latin1").toString("base64");

const cloneLib = once(() => require("./structuredClone.js") as typeof import("./structuredClone.js"));

/** The HTML standard's structured clone (structuredClone.ts); what it cannot clone is a DataCloneError. */
function structuredClone(value: unknown): unknown {
  return cloneLib().cloneStructured(value, (message) => {
    throw new (domEvents().DOMException)(message, "DataCloneError");
  });
}

const globals: AnyRecord = {
  console: sandboxConsole,
  ...timerGlobals,
  performance,
  global: globalThis,
  atob,
  btoa,
  structuredClone,
};
for (const [name, value] of Object.entries(globals)) defineGlobal(name, value);
const lazyGlobals: Record<string, () => unknown> = {
  URL: () => urlLib().URL,
  URLSearchParams: () => urlLib().URLSearchParams,
  TextEncoder: () => textCodec().TextEncoder,
  TextDecoder: () => textCodec().TextDecoder,
  Buffer: () => bufferLib().Buffer,
  fetch: () => fetchLib().fetch,
  Headers: () => fetchLib().Headers,
  Response: () => fetchLib().Response,
  Request: () => fetchLib().Request,
  AbortController: () => fetchLib().AbortController,
  AbortSignal: () => fetchLib().AbortSignal,
  crypto: webCrypto,
  CryptoKey: () => subtleLib().CryptoKey,
  SubtleCrypto: () => subtleLib().SubtleCrypto,
  process: sandboxProcess,
  // The web platform classes Node 20 has as globals; browser builds of packages use them.
  DOMException: () => domEvents().DOMException,
  Event: () => domEvents().Event,
  EventTarget: () => domEvents().EventTarget,
  CustomEvent: () => domEvents().CustomEvent,
  MessageEvent: () => domEvents().MessageEvent,
  Blob: () => blobLib().Blob,
  File: () => blobLib().File,
  FormData: () => blobLib().FormData,
  MessageChannel: () => messageChannel().MessageChannel,
  MessagePort: () => messageChannel().MessagePort,
  ...Object.fromEntries(WEB_STREAM_NAMES.map((name) => [name, () => streams().webStreams[name]])),
};
for (const [name, make] of Object.entries(lazyGlobals)) defineLazyGlobal(name, make);
// What web workers (and Deno) call the global object; browser builds reach globals through it
// (form-data's is `self.FormData`). Node has no `self`, but nothing in Node looks for one either.
// `window` and `document` stay undefined: with them libraries would take the sandbox for a page.
defineGlobal("self", globalThis);
// WebAssembly memory is allocated outside the isolate's heap limit, so it is not offered.
delete g["WebAssembly"];

const bufferModule = once(() => {
  const { Buffer, SlowBuffer, kMaxLength, INSPECT_MAX_BYTES } = bufferLib();
  const exports = {
    Buffer,
    SlowBuffer,
    kMaxLength,
    INSPECT_MAX_BYTES,
    constants: { MAX_LENGTH: kMaxLength, MAX_STRING_LENGTH: 2 ** 29 - 24 },
    atob,
    btoa,
  };
  return { ...exports, default: exports };
});

const eventsModule = once(() => {
  const emitter = EventEmitter();
  return Object.assign(emitter, { EventEmitter: emitter, default: emitter });
});
const nodeFetchModule = () => fetchLib().nodeFetchModule;

/** Built-in modules the component bundle reads through its virtual modules, each made on first use. */
const modules: Record<string, () => unknown> = {
  crypto: cryptoModule,
  buffer: bufferModule,
  url: once(() => require("./modules/url.js")),
  querystring: once(() => require("./modules/querystring.js")),
  util: once(() => require("./modules/util.js")),
  "util/types": once(() => {
    const { types } = require("./modules/util.js") as typeof import("./modules/util.js");
    return { ...types, default: types };
  }),
  console: () => g["console"],
  events: eventsModule,
  timers: () => timersModule,
  "timers/promises": () => timersModule.promises,
  "@pipedream/platform": once(() => require("./modules/platform.js")),
  "@pipedream/types": () => types,
  undici: once(() => require("./modules/undici.js")),
  "form-data": once(() => (require("./modules/formData.js") as typeof import("./modules/formData.js")).default),
  axios: once(() => (require("./modules/axios.js") as typeof import("./modules/axios.js")).default),
  "node-fetch": nodeFetchModule,
  "cross-fetch": nodeFetchModule,
  "isomorphic-fetch": nodeFetchModule,
  process: sandboxProcess,
  perf_hooks: () => ({ performance, default: { performance } }),
  // What the Node modules bundled on demand (isolate/node/) build on: the host HTTP bridge and /tmp.
  "headwater:internals": once(() =>
    Object.freeze({
      hostRequest,
      HttpBridgeError,
      tmp: tmpStore,
      registerReadable: (require("./bodyStream.js") as typeof import("./bodyStream.js")).registerReadable,
      registerReadStream: (require("./bodyStream.js") as typeof import("./bodyStream.js")).registerReadStream,
    }),
  ),
};
const registry = {};
for (const [name, make] of Object.entries(modules))
  Object.defineProperty(registry, name, { get: () => ownNames(make()), enumerable: true });
Object.defineProperty(g, "__hw_modules", { value: Object.freeze(registry), enumerable: false, writable: false, configurable: false });

function sandboxRequire(name: unknown): unknown {
  const id = String(name).replace(/^node:/, "");
  const make = Object.prototype.hasOwnProperty.call(modules, id) ? modules[id] : undefined;
  if (make !== undefined) return make();
  throw new Error(
    `require("${String(name)}"): this module is not available in the sandbox (only modules imported by name in the code are bundled)`,
  );
}

let factory: ((module: AnyRecord, exports: unknown, require: typeof sandboxRequire) => void) | undefined;
let component: AnyRecord | undefined;

defineGlobal("__hw_define", (f: typeof factory) => {
  if (factory === undefined && typeof f === "function") factory = f;
});

/** Runs the bundle's module factory; the JSON text answers ok or the error, and the description. */
function load(withDescribe: boolean): string {
  delete g["__hw_define"];
  if (!factory)
    return loadResultJson(
      { name: "Error", message: "the component bundle did not define a module", stack: undefined, code: "LOAD_ERROR" },
      undefined,
    );
  const mod: AnyRecord = { exports: {} };
  try {
    factory(mod, mod["exports"], sandboxRequire);
  } catch (err) {
    return loadResultJson(errorFields(err, "LOAD_ERROR"), undefined);
  }
  let describeJson: unknown;
  try {
    const exported = exportedComponent(mod["exports"]);
    component = isRecord(exported) ? exported : undefined;
    describeJson = withDescribe ? stringify(describeComponent(exported)) : undefined;
  } catch (err) {
    return loadResultJson(errorFields(err, "LOAD_ERROR"), undefined);
  }
  if (withDescribe && typeof describeJson !== "string") {
    return loadResultJson(
      { name: "Error", message: "the component could not be described as JSON", stack: undefined, code: "LOAD_ERROR" },
      undefined,
    );
  }
  return loadResultJson(undefined, describeJson as string | undefined);
}

function invokeEntry(payloadJson: string, dbJson: string, runId: number, tmp: InvokeTmp | undefined): Promise<string | PlatformFailure> {
  return invoke(component, payloadJson, dbJson, runId, tmp);
}

/**
 * A timer is due or an HTTP answer arrived. Answers undefined, or the message of the platform's own
 * failure: it never throws, so that a failed call is always an unhandled rejection of the component's.
 */
function dispatch(kind: string, id: number, payload: unknown): string | undefined {
  try {
    if (kind === "timer") fireTimer(id);
    else if (kind === "http") settleHttp(id, payload as Parameters<typeof settleHttp>[1]);
  } catch (err) {
    return errorFields(err).message;
  }
  return undefined;
}

/** Answers through the fire-and-forget bridge, behind every callback made before it (see IsolateSlot.invoke). */
function flush(): void {
  host().flushed();
}

defineGlobal("__hw_entry", { load, invoke: invokeEntry, awaitRun, dispatch, flush });
