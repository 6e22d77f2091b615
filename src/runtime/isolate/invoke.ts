// One invocation inside the isolate: bind the instance (this.<prop>, methods, db, http, timer,
// $emit), call run or a hook, and propose what happened as JSON text. The runner child decides:
// it parses the text with bounds, validates it, and enforces every limit itself.
//
// After the component's code has run (and during every later invocation of a warm isolate) its
// replacements of built-ins are live, so the code that reports the outcome uses only primordials
// captured at prelude start: no prototype methods, no globals, no keys assigned onto objects
// (prototype setters), no `await` of a promise whose `then` the component could have replaced.
import { componentProps, isRecord, type AnyRecord, type ResolvedProp } from "./component.js";
import { systemWarning } from "./console.js";
import { DbStore } from "./db.js";
import { describeProps } from "./describe.js";
import { emit, makeRespond } from "./emit.js";
import { abandonHttp, nextTurn, pendingRequests, requestsDone } from "./http.js";
import { httpRequestProp } from "./httpRequestProp.js";
import { beginInvocation, type IsolateLimits } from "./invocationState.js";
import { isLimitError } from "./limitError.js";
import {
  ArrayIsArray,
  cut,
  DateCtor,
  DateNow,
  DateToISOString,
  ErrorCtor,
  hasOwn,
  objectKeys,
  defineValue,
  ObjectCreate,
  parse,
  pinConstructor,
  PromiseCtor,
  PromiseThen,
  quote,
  RangeErrorCtor,
  ReflectApply,
  SafePromise,
  stringify,
  StringCtor,
} from "./primordials.js";
import { makeSend } from "./send.js";
import { clearAllTimers } from "./timers.js";
import { clearTmp, forEachTmpEntry, restoreTmp, type CarriedTmpEntry } from "./tmpStore.js";
import { host } from "./bridge.js";
import { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS, MAX_ERROR_STACK_CHARS, MAX_EXIT_REASON_CHARS } from "../rules.js";

export interface InvokePayload {
  method: "run" | "deploy" | "activate" | "deactivate" | "additionalProps" | "options";
  props: AnyRecord;
  event?: unknown;
  http?: { endpoint?: string; customResponse?: boolean };
  /** Sources: the props additionalProps() added at deploy (name, type, default), built like the component's own. */
  additionalProps?: { name: string; type: string; default?: unknown; customResponse?: boolean }[];
  steps?: AnyRecord;
  limits: IsolateLimits;
  /** How long after its start the invocation may wait for requests it left pending (below its timeout). */
  settleMs?: number;
}

/**
 * A workflow step's /tmp, given by the runner child apart from the JSON payload so that bytes
 * cross as bytes: what the previous step left (`entries`), and whether this run hands its own on.
 */
export interface InvokeTmp {
  entries: CarriedTmpEntry[];
  keep: boolean;
}

export interface ErrorFields {
  name: string;
  message: string;
  stack: string | undefined;
  code: string;
}

type Fn = (...args: unknown[]) => unknown;

let exitOf: (value: unknown) => { reason: string | undefined } | undefined;

/**
 * `$.flow.delay`, `rerun` and `suspend` pause a workflow to resume it later, which Headwater's
 * workflows do not: the step fails saying so, as a configuration error, not with "not a function".
 */
function flowUnavailable(name: string): () => never {
  return () => {
    const error = new ErrorCtor(
      `$.flow.${name}() is not available in Headwater: workflows run their steps in one go and are not paused or resumed`,
    );
    error.name = "ConfigurationError";
    throw error;
  };
}

/** $.flow.exit(): ends an action's run successfully. Recognized by a brand, not by instanceof. */
class FlowExit {
  readonly #reason: string | undefined;
  constructor(reason: string | undefined) {
    this.#reason = reason;
  }
  static {
    exitOf = (value) => (typeof value === "object" && value !== null && #reason in value ? { reason: value.#reason } : undefined);
  }
}

function read(target: object, key: string): unknown {
  try {
    return (target as AnyRecord)[key];
  } catch {
    return undefined;
  }
}

/** String(value) that survives a throwing or lying toString / Symbol.toPrimitive. */
function text(value: unknown): string {
  try {
    const s = StringCtor(value);
    return typeof s === "string" ? s : "[unprintable value]";
  } catch {
    return "[unprintable value]";
  }
}

/** Name, message, stack and code of whatever the component threw; getters may throw or lie. */
export function errorFields(err: unknown, code?: string): ErrorFields {
  let c = code ?? (isLimitError(err) ? "LIMIT_EXCEEDED" : "USER_ERROR");
  if ((typeof err === "object" && err !== null) || typeof err === "function") {
    let isError = false;
    try {
      isError = err instanceof ErrorCtor;
    } catch {
      /* a throwing Symbol.hasInstance: treat as not an Error */
    }
    const message = read(err, "message");
    if (isError || typeof message === "string") {
      const rawName = read(err, "name");
      const name = typeof rawName === "string" ? rawName : "Error";
      const stack = read(err, "stack");
      if (code === undefined && name === "ConfigurationError") c = "CONFIGURATION_ERROR";
      return {
        name: cut(name, MAX_ERROR_NAME_CHARS),
        message: cut(typeof message === "string" ? message : text(message), MAX_ERROR_MESSAGE_CHARS),
        stack: typeof stack === "string" ? cut(stack, MAX_ERROR_STACK_CHARS) : undefined,
        code: c,
      };
    }
  }
  let shown: string;
  if (typeof err === "string") shown = err;
  else {
    let json: unknown;
    try {
      json = stringify(err);
    } catch {
      json = undefined;
    }
    shown = typeof json === "string" ? json : text(err);
  }
  return { name: "Error", message: cut("non-error thrown: " + shown, MAX_ERROR_MESSAGE_CHARS), stack: undefined, code: c };
}

function errorJson(e: ErrorFields): string {
  return (
    '{"name":' +
    quote(e.name) +
    ',"message":' +
    quote(e.message) +
    ',"stack":' +
    (e.stack === undefined ? "null" : quote(e.stack)) +
    ',"code":' +
    quote(e.code) +
    "}"
  );
}

/** The JSON text of a load result, built from primitives only. */
export function loadResultJson(error: ErrorFields | undefined, describeJson: string | undefined): string {
  return (
    '{"ok":' +
    (error === undefined ? "true" : "false") +
    ',"error":' +
    (error === undefined ? "null" : errorJson(error)) +
    ',"describe":' +
    (describeJson ?? "null") +
    "}"
  );
}

/** A function of the component called with `self` as this, via the captured Reflect.apply. */
function bindTo(fn: Fn, self: unknown): Fn {
  return (...args: unknown[]) => ReflectApply(fn, self, args);
}

function makeApp(def: AnyRecord, configured: unknown): AnyRecord {
  const app: AnyRecord = {};
  const keys = objectKeys(def);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (key !== "methods") defineValue(app, key, def[key]);
  }
  const auth = isRecord(configured) && isRecord(configured["$auth"]) ? configured["$auth"] : {};
  defineValue(app, "$auth", auth);
  const methods = def["methods"];
  if (isRecord(methods)) {
    const names = objectKeys(methods);
    for (let i = 0; i < names.length; i++) {
      const fn = methods[names[i]];
      if (typeof fn === "function") defineValue(app, names[i], bindTo(fn as Fn, app));
    }
  }
  return app;
}

/**
 * The component's props with the ones additionalProps() added at deploy (a source's, given by the
 * trusted side): an added prop of an own prop's name takes its place, as its definition does there.
 */
function withAdditional(own: [string, ResolvedProp][], additional: InvokePayload["additionalProps"]): [string, ResolvedProp][] {
  if (!ArrayIsArray(additional) || additional.length === 0) return own;
  const added: [string, ResolvedProp][] = [];
  const names: AnyRecord = {};
  for (let i = 0; i < additional.length; i++) {
    const prop = additional[i];
    const def: AnyRecord = { type: prop.type };
    if (prop.default !== undefined) def["default"] = prop.default;
    if (prop.customResponse === true) def["customResponse"] = true;
    defineValue(added, added.length, [prop.name, { def, raw: def }]);
    defineValue(names, prop.name, true);
  }
  const out: [string, ResolvedProp][] = [];
  for (let i = 0; i < own.length; i++) if (!hasOwn(names, own[i][0])) defineValue(out, out.length, own[i]);
  for (let i = 0; i < added.length; i++) defineValue(out, out.length, added[i]);
  return out;
}

/**
 * A `dir` prop: Pipedream's File Stash directory, which Headwater does not offer. Components that
 * declare one (optional, to stash files on request) load and run; using it says why it fails.
 */
function fileStashDir(name: string): AnyRecord {
  const unavailable = (method: string) => () => {
    throw new ErrorCtor(
      `this.${name}.${method}(): dir props (Pipedream's File Stash) are not available in Headwater; write files to /tmp within the run instead`,
    );
  };
  const dir: AnyRecord = {};
  const methods = ["open", "dir", "listFiles", "delete"];
  for (let i = 0; i < methods.length; i++) defineValue(dir, methods[i], unavailable(methods[i]));
  return dir;
}

function buildInstance(component: AnyRecord, p: InvokePayload, db: DbStore, isAction: boolean): AnyRecord {
  const instance: AnyRecord = {};
  const configured = p.props ?? {};
  let dbFacade: AnyRecord | undefined;
  const strictRespond = isAction;
  const props = withAdditional(componentProps(component), p.additionalProps);
  for (let i = 0; i < props.length; i++) {
    // Index access, not destructuring: the array iterator is replaceable.
    const name = props[i][0];
    const def = props[i][1].def;
    const type = def["type"];
    const value = configured[name];
    switch (type) {
      case "app":
        defineValue(instance, name, makeApp(def, value));
        break;
      case "app[]": {
        const apps: AnyRecord[] = [];
        if (ArrayIsArray(value)) for (let j = 0; j < value.length; j++) defineValue(apps, j, makeApp(def, value[j]));
        defineValue(instance, name, apps);
        break;
      }
      case "$.service.db":
        defineValue(instance, name, (dbFacade ??= db.facade()));
        break;
      case "dir":
        defineValue(instance, name, fileStashDir(name));
        break;
      case "http_request":
        defineValue(instance, name, httpRequestProp(name, value !== undefined ? value : def["default"]));
        break;
      case "$.interface.http": {
        const custom = p.http?.customResponse ?? def["customResponse"] === true;
        defineValue(instance, name, {
          endpoint: p.http?.endpoint ?? null,
          customResponse: custom,
          respond: makeRespond(strictRespond || custom, systemWarning),
        });
        break;
      }
      default:
        defineValue(instance, name, value !== undefined ? value : def["default"]);
    }
  }
  if (isAction) {
    // Values of the props additionalProps() added (the trusted side checked them against those props).
    const names = objectKeys(configured);
    for (let i = 0; i < names.length; i++) if (!hasOwn(instance, names[i])) defineValue(instance, names[i], configured[names[i]]);
  }
  const methods = component["methods"];
  if (isRecord(methods)) {
    const names = objectKeys(methods);
    for (let i = 0; i < names.length; i++) {
      const fn = methods[names[i]];
      if (typeof fn === "function") defineValue(instance, names[i], bindTo(fn as Fn, instance));
    }
  }
  defineValue(instance, "$emit", emit);
  return instance;
}

/**
 * One page of a prop's options (`request`: {prop, page, prevContext}): its `options` method called
 * as Pipedream does, with {page, prevContext} and, for a propDefinition, the inputValues it gives
 * (an object, or a function of the configured props); `this` is the app the definition comes from
 * (its $auth from the component's prop of that app), else the component's instance. A static list
 * is answered as is. The answer is {options, context}: an array returned is the whole answer.
 */
async function propOptions(component: AnyRecord, instance: AnyRecord, request: unknown): Promise<unknown> {
  const r = isRecord(request) ? request : {};
  const props = componentProps(component);
  let found: (typeof props)[number][1] | undefined;
  for (let i = 0; i < props.length; i++) if (props[i][0] === r["prop"]) found = props[i][1];
  if (found === undefined) throw new TypeError(`the component has no prop ${String(r["prop"])}`);
  const options = found.def["options"];
  if (typeof options !== "function") return { options: ArrayIsArray(options) ? options : [], context: null };
  let self: AnyRecord = instance;
  let inputValues: AnyRecord = {};
  const pd = found.propDefinition;
  if (pd?.appIsApp) {
    // The component's own prop holding that app (its $auth configured), else the bare app.
    let app: AnyRecord | undefined;
    for (let i = 0; i < props.length; i++)
      if (props[i][1].raw === pd.app && isRecord(instance[props[i][0]])) app = instance[props[i][0]] as AnyRecord;
    self = app ?? makeApp(pd.app as AnyRecord, undefined);
    const raw = isRecord(found.raw) ? found.raw["propDefinition"] : undefined;
    const given: unknown = ArrayIsArray(raw) ? raw[2] : undefined;
    const values = typeof given === "function" ? await awaitable(ReflectApply(given as Fn, instance, [instance])) : given;
    if (isRecord(values)) inputValues = values;
  }
  const args: AnyRecord = { ...inputValues };
  defineValue(args, "page", typeof r["page"] === "number" ? r["page"] : 0);
  defineValue(args, "prevContext", r["prevContext"] ?? {});
  const returned = await awaitable(ReflectApply(options as Fn, self, [args]));
  if (ArrayIsArray(returned)) return { options: returned, context: null };
  if (isRecord(returned) && ArrayIsArray(returned["options"]))
    return { options: returned["options"], context: returned["context"] ?? null };
  throw new TypeError("options() must return an array of options, or { options, context }");
}

function defaultRun(this: AnyRecord, event: unknown): void {
  emit(event, {});
}

/**
 * What the component's function returned, ready to be awaited: a thenable gets an own
 * `constructor`, so awaiting a native promise observes its real settlement (see pinConstructor).
 */
function awaitable(value: unknown): unknown {
  if ((typeof value === "object" && value !== null) || typeof value === "function") {
    const then = (value as AnyRecord)["then"];
    if (typeof then === "function" && !pinConstructor(value, PromiseCtor)) {
      throw new TypeError("the component returned a promise the platform cannot observe safely (frozen, sealed or a refusing proxy)");
    }
  }
  return value;
}

/** JSON text of an action's return value or exports; too large or deep values fail the run. */
function valueJson(value: unknown, what: string, maxBytes: number): { json?: string; error?: ErrorFields } {
  let json: unknown;
  try {
    json = stringify(value);
  } catch (err) {
    let overflow: boolean;
    try {
      overflow = err instanceof RangeErrorCtor;
    } catch {
      overflow = false;
    }
    // A stack overflow (nested too deeply) or a string too long for V8 is a limit; anything else
    // (a BigInt, a cycle) keeps the old behaviour: the value as a string.
    if (overflow)
      return {
        error: {
          name: "LimitError",
          message: `${what} is nested too deeply or too large to serialize as JSON`,
          stack: undefined,
          code: "LIMIT_EXCEEDED",
        },
      };
    json = quote(text(value));
  }
  if (typeof json !== "string") return {};
  if (json.length > maxBytes) {
    return {
      error: {
        name: "LimitError",
        message: `${what} is over the limit of ${maxBytes} bytes of JSON (${json.length} characters)`,
        stack: undefined,
        code: "LIMIT_EXCEEDED",
      },
    };
  }
  return { json };
}

async function run(component: AnyRecord | undefined, payloadJson: string, dbJson: string, tmp: InvokeTmp | undefined): Promise<string> {
  if (component === undefined) {
    return resultJson(
      { name: "Error", message: "the component is not loaded", stack: undefined, code: "LOAD_ERROR" },
      undefined,
      undefined,
      undefined,
      0,
    );
  }
  const p = parse(payloadJson) as InvokePayload;
  const started = DateNow();
  const state = beginInvocation(p.limits);
  const exportsOut: AnyRecord = ObjectCreate(null);
  const isAction = component["type"] === "action";
  let error: ErrorFields | undefined;
  let exited: { reason: string | undefined } | undefined;
  let returned: unknown;
  try {
    if (tmp !== undefined && tmp.entries.length > 0) restoreTmp(tmp.entries);
    const instance = buildInstance(component, p, new DbStore(dbJson), isAction);
    if (p.method === "run") {
      if (isAction) {
        const $ = {
          export: (name: unknown, value: unknown) => {
            if (typeof name !== "string") throw new TypeError("$.export: the name must be a string");
            defineValue(exportsOut, name, value);
          },
          flow: {
            exit: (reason?: unknown) => {
              throw new FlowExit(reason === undefined ? undefined : cut(text(reason), MAX_EXIT_REASON_CHARS));
            },
            delay: flowUnavailable("delay"),
            rerun: flowUnavailable("rerun"),
            suspend: flowUnavailable("suspend"),
          },
          // What Pipedream tells a step of its execution: this is its first run (a rerun never comes).
          context: {
            ts: ReflectApply(DateToISOString, new DateCtor(started), []),
            test: false,
            replay: false,
            run: { runs: 1, retry_count: 0 },
          },
          respond: makeRespond(true, systemWarning),
          send: makeSend(),
        };
        returned = await awaitable(ReflectApply(component["run"] as Fn, instance, [{ $, steps: p.steps ?? {} }]));
      } else {
        const fn = typeof component["run"] === "function" ? (component["run"] as Fn) : defaultRun;
        await awaitable(ReflectApply(fn, instance, [p.event]));
      }
    } else if (p.method === "options") {
      returned = await propOptions(component, instance, p.event);
    } else if (p.method === "additionalProps") {
      const fn = component["additionalProps"];
      // Pipedream passes the component's own prop definitions; what comes back is described like props.
      const more = typeof fn === "function" ? await awaitable(ReflectApply(fn as Fn, instance, [component["props"] ?? {}])) : {};
      if (!isRecord(more)) throw new TypeError("additionalProps() must return an object of prop definitions");
      returned = describeProps(more);
    } else {
      const hooks = component["hooks"];
      const hook = isRecord(hooks) ? hooks[p.method] : undefined;
      if (typeof hook === "function") await awaitable(ReflectApply(hook as Fn, instance, []));
    }
  } catch (err) {
    exited = exitOf(err);
    if (exited === undefined) error = errorFields(err);
  }
  if (error === undefined && exited === undefined && typeof p.settleMs === "number") await settleRequests(started + p.settleMs);
  clearAllTimers();
  abandonHttp();
  try {
    // A workflow's next step gets this run's files; only a run that succeeded has a next step.
    if (tmp !== undefined && tmp.keep && error === undefined && exited === undefined) handOnTmp();
  } finally {
    clearTmp();
  }
  let returnJson: string | undefined;
  let exportsJson: string | undefined;
  if (
    error === undefined &&
    exited === undefined &&
    ((isAction && p.method === "run") || p.method === "additionalProps" || p.method === "options")
  ) {
    const what = p.method === "run" ? "the return value" : p.method === "options" ? "the options" : "the props additionalProps() returned";
    const r = valueJson(returned, what, p.limits.maxEmitBytes);
    returnJson = r.json;
    error = r.error;
  }
  if (error === undefined && objectKeys(exportsOut).length > 0) {
    const r = valueJson(exportsOut, "the exports ($.export)", p.limits.maxEmitBytes);
    exportsJson = r.json;
    error = r.error;
    // A failed run reports neither.
    if (error !== undefined) returnJson = undefined;
  }
  return resultJson(error, returnJson, exportsJson, exited, state.droppedLogLines);
}

/** Every entry of /tmp to the runner child, which checks them and answers them with the outcome. */
function handOnTmp(): void {
  const bridge = host();
  forEachTmpEntry((path, entry) => bridge.tmp(path, entry.kind, entry.data, entry.mtimeMs, entry.birthtimeMs));
}

/** Rounds of "the requests were answered, and what followed made more" before the end is forced. */
const MAX_SETTLE_ROUNDS = 100;

/**
 * Work the invocation started and did not await (asana's run calls its async emitEvent without
 * `await`) finishes as Node's event loop would let it: while requests it made are pending, the
 * invocation waits for them, and for what follows them, until `deadline` (below its timeout).
 * What is still pending then is abandoned, as before.
 */
async function settleRequests(deadline: number): Promise<void> {
  try {
    for (let round = 0; round < MAX_SETTLE_ROUNDS && pendingRequests() > 0; round++) {
      const left = deadline - DateNow();
      if (left <= 0 || !(await requestsDone(left))) return;
      await nextTurn();
    }
  } catch {
    // The timers and the request table use the isolate's Map, which the component may have
    // replaced: then the run ends now, its requests abandoned, as it did before waiting existed.
  }
}

/** The JSON text of an invocation result, built from primitives only. */
function resultJson(
  error: ErrorFields | undefined,
  returnJson: string | undefined,
  exportsJson: string | undefined,
  exited: { reason: string | undefined } | undefined,
  dropped: number,
): string {
  return (
    '{"ok":' +
    (error === undefined ? "true" : "false") +
    ',"error":' +
    (error === undefined ? "null" : errorJson(error)) +
    ',"returnValue":' +
    (returnJson === undefined ? "null" : quote(returnJson)) +
    ',"exports":' +
    (exportsJson === undefined ? "null" : quote(exportsJson)) +
    ',"exited":' +
    (exited === undefined ? "null" : '{"reason":' + (exited.reason === undefined ? "null" : quote(exited.reason)) + "}") +
    ',"droppedLogLines":' +
    (typeof dropped === "number" && dropped >= 0 && dropped <= 1e9 ? dropped : 0) +
    "}"
  );
}

/**
 * What the invocation's promise settles with when the platform's own code of the run failed (its
 * promise rejected: almost always built-ins the component replaced). The invocation's promise never
 * rejects, so that the runner child can tell this failure from an unhandled rejection of the
 * component's, which isolated-vm reports by failing the call into the isolate.
 */
export interface PlatformFailure {
  platformFailure: string;
}

function platformFailure(err: unknown): PlatformFailure {
  const failure = ObjectCreate(null) as PlatformFailure;
  defineValue(failure, "platformFailure", errorFields(err).message);
  return failure;
}

/** The promise of the invocation under way (or the last one) and the runner child's id of it, for awaitRun. */
let currentRun: Promise<string | PlatformFailure> | undefined;
let currentRunId: number | undefined;

/**
 * The invocation entry: its promise is awaited through SafePromise, out of the component's reach.
 * It resolves with the result's JSON text, or with a PlatformFailure; it never rejects.
 */
export function invoke(
  component: AnyRecord | undefined,
  payloadJson: string,
  dbJson: string,
  runId: number,
  tmp?: InvokeTmp,
): Promise<string | PlatformFailure> {
  currentRun = currentRunId = undefined;
  const promise = run(component, payloadJson, dbJson, tmp);
  pinConstructor(promise, SafePromise);
  const settled = PromiseThen<string, string | PlatformFailure>(promise, undefined, platformFailure);
  pinConstructor(settled, SafePromise);
  currentRun = settled;
  currentRunId = runId;
  return settled;
}

/**
 * The promise of the invocation under way again: when a call into the isolate fails with an
 * unhandled rejection (isolated-vm fails the call whose turn left one), the runner child records
 * it and waits for the run's end through this.
 */
export function awaitRun(runId: number): Promise<string | PlatformFailure> | undefined {
  return runId === currentRunId ? currentRun : undefined;
}
