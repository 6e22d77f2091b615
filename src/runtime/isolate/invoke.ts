// One invocation inside the isolate: bind the instance (this.<prop>, methods, db, http, timer,
// $emit), call run or a hook, and report what happened as JSON.
import { componentProps, isRecord, type AnyRecord } from "./component.js";
import { DbStore } from "./db.js";
import { emit, respond } from "./emit.js";
import { abandonHttp } from "./http.js";
import { beginInvocation, current, type IsolateLimits } from "./invocationState.js";
import { jsonSafe } from "./json.js";
import { clearAllTimers } from "./timers.js";
import { objectEntries, objectKeys, parse, stringify } from "./primordials.js";

export interface InvokePayload {
  method: "run" | "deploy" | "activate" | "deactivate";
  props: AnyRecord;
  event?: unknown;
  db?: AnyRecord;
  http?: { endpoint?: string; customResponse?: boolean };
  steps?: AnyRecord;
  limits: IsolateLimits;
}

class FlowExit {
  constructor(readonly reason: string | undefined) {}
}

function serializeError(err: unknown): { name: string; message: string; stack?: string; code: string } {
  if (err instanceof Error || (isRecord(err) && typeof err["message"] === "string")) {
    const e = err as Error & { code?: unknown };
    const name = typeof e.name === "string" ? e.name : "Error";
    const stack = typeof e.stack === "string" ? e.stack.slice(0, 8192) : undefined;
    return {
      name,
      message: String(e.message).slice(0, 8192),
      ...(stack ? { stack } : {}),
      code: name === "ConfigurationError" ? "CONFIGURATION_ERROR" : "USER_ERROR",
    };
  }
  let text: string;
  try {
    text = typeof err === "string" ? err : stringify(err) ?? String(err);
  } catch {
    text = String(err);
  }
  return { name: "Error", message: `non-error thrown: ${text.slice(0, 8192)}`, code: "USER_ERROR" };
}

function makeApp(def: AnyRecord, configured: unknown): AnyRecord {
  const app: AnyRecord = {};
  for (const key of objectKeys(def)) if (key !== "methods") app[key] = def[key];
  const auth = isRecord(configured) && isRecord(configured["$auth"]) ? configured["$auth"] : {};
  app["$auth"] = auth;
  const methods = def["methods"];
  if (isRecord(methods)) {
    for (const [name, fn] of objectEntries(methods)) if (typeof fn === "function") app[name] = (fn as (...a: unknown[]) => unknown).bind(app);
  }
  return app;
}

function buildInstance(component: AnyRecord, p: InvokePayload, db: DbStore): AnyRecord {
  const instance: AnyRecord = {};
  const configured = p.props ?? {};
  let dbFacade: AnyRecord | undefined;
  for (const [name, { def }] of componentProps(component)) {
    const type = def["type"];
    const value = configured[name];
    switch (type) {
      case "app":
        instance[name] = makeApp(def, value);
        break;
      case "app[]":
        instance[name] = Array.isArray(value) ? value.map((v) => makeApp(def, v)) : [];
        break;
      case "$.service.db":
        instance[name] = dbFacade ??= db.facade();
        break;
      case "$.interface.http":
        instance[name] = {
          endpoint: p.http?.endpoint ?? null,
          customResponse: p.http?.customResponse ?? def["customResponse"] === true,
          respond,
        };
        break;
      default:
        instance[name] = value !== undefined ? value : def["default"];
    }
  }
  const methods = component["methods"];
  if (isRecord(methods)) {
    for (const [name, fn] of objectEntries(methods)) if (typeof fn === "function") instance[name] = (fn as (...a: unknown[]) => unknown).bind(instance);
  }
  instance["$emit"] = emit;
  return instance;
}

function defaultRun(this: AnyRecord, event: unknown): void {
  (this["$emit"] as typeof emit)(event, {});
}

export async function invoke(component: AnyRecord, payloadJson: string): Promise<string> {
  const p = parse(payloadJson) as InvokePayload;
  beginInvocation(p.limits);
  const db = new DbStore(p.db ?? {}, p.limits.maxDbBytes);
  const exportsOut: AnyRecord = {};
  const result: AnyRecord = { ok: true };
  try {
    const instance = buildInstance(component, p, db);
    const isAction = component["type"] === "action";
    if (p.method === "run") {
      if (isAction) {
        const $ = {
          export: (name: unknown, value: unknown) => {
            if (typeof name !== "string") throw new TypeError("$.export: the name must be a string");
            exportsOut[name] = value;
          },
          flow: {
            exit: (reason?: unknown) => {
              throw new FlowExit(reason === undefined ? undefined : String(reason));
            },
          },
          respond,
          send: {
            emit: (cfg: { raw_event?: unknown; name?: string } = {}) => emit(cfg.raw_event, cfg.name ? { name: cfg.name } : {}),
            http: () => {
              throw new Error("$.send.http is not available in Headwater; use axios or fetch");
            },
            email: () => {
              throw new Error("$.send.email is not available in Headwater");
            },
            s3: () => {
              throw new Error("$.send.s3 is not available in Headwater");
            },
            sse: () => {
              throw new Error("$.send.sse is not available in Headwater");
            },
          },
        };
        const rv = await (component["run"] as (a: unknown) => unknown).call(instance, { $, steps: p.steps ?? {} });
        result["returnValue"] = jsonSafe(rv);
      } else {
        const run = typeof component["run"] === "function" ? (component["run"] as (e: unknown) => unknown) : defaultRun;
        await run.call(instance, p.event);
      }
    } else {
      const hooks = component["hooks"];
      const hook = isRecord(hooks) ? hooks[p.method] : undefined;
      if (typeof hook === "function") await (hook as () => unknown).call(instance);
    }
  } catch (err) {
    if (err instanceof FlowExit) result["exited"] = err.reason === undefined ? {} : { reason: err.reason };
    else {
      result["ok"] = false;
      result["error"] = serializeError(err);
    }
  } finally {
    clearAllTimers();
    abandonHttp();
  }
  if (objectKeys(exportsOut).length > 0) result["exports"] = jsonSafe(exportsOut);
  result["dbChanged"] = db.changed;
  result["droppedLogLines"] = current().droppedLogLines;
  // The db snapshot travels as JSON text spliced in, so it is not serialized twice.
  const head = stringify(result);
  return db.changed ? `${head.slice(0, -1)},"db":${db.toJSONText()}}` : head;
}

export { serializeError };
