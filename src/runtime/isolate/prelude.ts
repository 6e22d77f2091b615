// Entry of the prelude script that every isolate runs before the component: it takes the host
// bridge, installs the globals a component expects (console, timers, URL, TextEncoder, Buffer,
// fetch, crypto.getRandomValues) and the module registry, then exposes load / invoke / describe /
// dispatch to the host through one global the host removes right away.
import { Buffer, INSPECT_MAX_BYTES, kMaxLength, SlowBuffer } from "buffer";
import EventEmitter from "events";
import { registerReadable } from "./bodyStream.js";
import { setBridge, takeBridge } from "./bridge.js";
import { exportedComponent, isRecord, type AnyRecord } from "./component.js";
import { sandboxConsole } from "./console.js";
import { describeComponent } from "./describe.js";
import { AbortController, AbortSignal, fetch, Headers, nodeFetchModule, Response } from "./fetch.js";
import { HttpBridgeError, hostRequest, settleHttp } from "./http.js";
import { errorFields, invoke, loadResultJson } from "./invoke.js";
import { stringify } from "./primordials.js";
import axios from "./modules/axios.js";
import * as cryptoModule from "./modules/crypto.js";
import * as platform from "./modules/platform.js";
import * as querystring from "./modules/querystring.js";
import * as types from "./modules/types.js";
import * as urlModule from "./modules/url.js";
import * as util from "./modules/util.js";
import { sandboxProcess } from "./process.js";
import { TextDecoder, TextEncoder } from "./textCodec.js";
import { tmpStore } from "./tmpStore.js";
import { fireTimer, setUncaughtHandler, timerGlobals, timersModule } from "./timers.js";
import { URL, URLSearchParams } from "./url.js";

setBridge(takeBridge());
setUncaughtHandler((err) => sandboxConsole.error("Uncaught exception:", err));

const g = globalThis as unknown as AnyRecord;

function defineGlobal(name: string, value: unknown): void {
  Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
}

const webCrypto = { getRandomValues: cryptoModule.getRandomValues, randomUUID: cryptoModule.randomUUID };
const performance = {
  now: (() => {
    const t0 = Date.now();
    return () => Date.now() - t0;
  })(),
  timeOrigin: Date.now(),
};

const globals: AnyRecord = {
  console: sandboxConsole,
  ...timerGlobals,
  URL,
  URLSearchParams,
  TextEncoder,
  TextDecoder,
  Buffer,
  fetch,
  Headers,
  Response,
  AbortController,
  AbortSignal,
  crypto: webCrypto,
  performance,
  global: globalThis,
  process: sandboxProcess,
  atob: (s: string) => Buffer.from(String(s), "base64").toString("latin1"),
  btoa: (s: string) => Buffer.from(String(s), "latin1").toString("base64"),
  structuredClone: (v: unknown) => (v === undefined ? undefined : JSON.parse(stringify(v))),
};
for (const [name, value] of Object.entries(globals)) defineGlobal(name, value);
// WebAssembly memory is allocated outside the isolate's heap limit, so it is not offered.
delete g["WebAssembly"];

const bufferExports = {
  Buffer,
  SlowBuffer,
  kMaxLength,
  INSPECT_MAX_BYTES,
  constants: { MAX_LENGTH: kMaxLength, MAX_STRING_LENGTH: 2 ** 29 - 24 },
  atob: globals["atob"],
  btoa: globals["btoa"],
};
const bufferModule = { ...bufferExports, default: bufferExports };

const eventsModule = Object.assign(EventEmitter, { EventEmitter, default: EventEmitter });

/** Built-in modules the component bundle reads through its virtual modules. */
const modules: AnyRecord = {
  crypto: cryptoModule,
  buffer: bufferModule,
  url: urlModule,
  querystring,
  util,
  events: eventsModule,
  timers: timersModule,
  "timers/promises": timersModule.promises,
  "@pipedream/platform": platform,
  "@pipedream/types": types,
  axios,
  "node-fetch": nodeFetchModule,
  "cross-fetch": nodeFetchModule,
  "isomorphic-fetch": nodeFetchModule,
  process: sandboxProcess,
  perf_hooks: { performance, default: { performance } },
  // What the Node modules bundled on demand (isolate/node/) build on: the host HTTP bridge and /tmp.
  "headwater:internals": Object.freeze({ hostRequest, HttpBridgeError, tmp: tmpStore, registerReadable }),
};
Object.defineProperty(g, "__hw_modules", { value: Object.freeze({ ...modules }), enumerable: false, writable: false, configurable: false });

function sandboxRequire(name: unknown): unknown {
  const id = String(name).replace(/^node:/, "");
  const found = modules[id];
  if (found !== undefined) return found;
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

function invokeEntry(payloadJson: string, dbJson: string): Promise<string> {
  return invoke(component, payloadJson, dbJson);
}

function dispatch(kind: string, id: number, payload: unknown): void {
  if (kind === "timer") fireTimer(id);
  else if (kind === "http") settleHttp(id, payload as Parameters<typeof settleHttp>[1]);
}

defineGlobal("__hw_entry", { load, invoke: invokeEntry, dispatch });
