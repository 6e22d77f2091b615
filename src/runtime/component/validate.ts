// Validation of a component's description (made inside the isolate) against the seed's
// "Component definition" tables. Pure: description in, problems and normalized metadata out.
import type { Problem } from "../errors.js";
import type { ComponentMeta, ComponentType, NormalizedProp, PropOption } from "../types.js";

type Rec = Record<string, unknown>;

interface PropTypeRule {
  array: boolean;
  source: boolean;
  action: boolean;
}

export const PROP_TYPES: Readonly<Record<string, PropTypeRule>> = {
  app: { array: true, source: true, action: true },
  boolean: { array: true, source: true, action: true },
  integer: { array: true, source: true, action: true },
  string: { array: true, source: true, action: true },
  object: { array: false, source: true, action: true },
  any: { array: false, source: false, action: true },
  "$.interface.http": { array: false, source: true, action: false },
  "$.interface.timer": { array: false, source: true, action: false },
  "$.service.db": { array: false, source: true, action: true },
  /** Text shown to whoever configures the component (content, alertType): nothing to configure. */
  alert: { array: false, source: true, action: true },
  /** Pipedream's File Stash directory (accessMode, sync): nothing to configure; its methods explain it is not offered. */
  dir: { array: false, source: true, action: true },
  /** One HTTP request (url, method, headers, params, body, auth); the component calls `this.<prop>.execute()`. */
  http_request: { array: false, source: true, action: true },
};

const HOOKS = new Set(["deploy", "activate", "deactivate"]);
const DEDUPE = new Set(["unique", "greatest", "last"]);

function isRec(v: unknown): v is Rec {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isFn(v: unknown): boolean {
  return isRec(v) && v["$fn"] === true;
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (isRec(v)) {
    if (v["$fn"] === true) return "function";
    if (v["$undefined"] === true) return "undefined";
    if (typeof v["$type"] === "string") return v["$type"];
    if (typeof v["$number"] === "string") return `number ${v["$number"]}`;
    if (typeof v["$object"] === "string") return `${v["$object"]} object`;
    return "object";
  }
  return typeof v;
}

export interface ValidationResult {
  problems: Problem[];
  meta?: ComponentMeta;
}

export function validateDescription(described: unknown): ValidationResult {
  const problems: Problem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  const d = isRec(described) ? described : {};
  if (d["exportKind"] !== "object") {
    add(
      "(module)",
      `the module must export a component object (export default or module.exports), got ${typeof d["exportKind"] === "string" ? d["exportKind"] : "nothing"}`,
    );
    return { problems };
  }
  const f = isRec(d["fields"]) ? d["fields"] : {};

  let type: ComponentType = "source";
  const rawType = f["type"];
  if (rawType === undefined) type = "source";
  else if (rawType === "action" || rawType === "source") type = rawType;
  else if (rawType === "app") add("type", 'this module is an app (type "app"); save a source or an action that uses it');
  else add("type", `type must be "action" or "source" (or absent for a source), got ${JSON.stringify(rawType)}`);

  const requireString = (key: string, required: boolean) => {
    const v = f[key];
    if (v === undefined) {
      if (required) add(key, `${key} is required`);
      return undefined;
    }
    if (typeof v !== "string") {
      add(key, `${key} must be a string, got ${kindOf(v)}`);
      return undefined;
    }
    if (required && v.trim() === "") add(key, `${key} must not be empty`);
    return v;
  };
  const name = requireString("name", true);
  const version = requireString("version", true);
  const key = requireString("key", false);
  const description = requireString("description", false);

  // Props first: whether a source may omit run depends on its interfaces.
  const props: NormalizedProp[] = [];
  const methods = isRec(f["methods"]) ? Object.keys(f["methods"]) : [];
  if (f["methods"] !== undefined) {
    if (!isRec(f["methods"]) || isFn(f["methods"])) add("methods", `methods must be an object of functions, got ${kindOf(f["methods"])}`);
    else
      for (const [m, v] of Object.entries(f["methods"]))
        if (!isFn(v)) add(`methods.${m}`, `methods.${m} must be a function, got ${kindOf(v)}`);
  }
  const propsKind = d["propsKind"];
  if (propsKind !== "absent" && propsKind !== "object") add("props", `props must be an object, got ${String(propsKind)}`);
  const described_props = isRec(d["props"]) ? d["props"] : {};
  for (const [propName, entry] of Object.entries(described_props)) {
    const prop = validateProp(propName, isRec(entry) ? entry : {}, type, add);
    if (prop) props.push(prop);
    if (methods.includes(propName)) add(`props.${propName}`, `"${propName}" is both a prop and a method`);
    if (propName === "$emit") add(`props.${propName}`, '"$emit" is reserved');
  }

  const run = f["run"];
  const hasRun = run !== undefined;
  if (hasRun && !isFn(run)) add("run", `run must be a method, got ${kindOf(run)}`);
  if (!hasRun) {
    if (type === "action") add("run", "run is required for actions");
    else if (!props.some((p) => p.type === "$.interface.timer" || p.type === "$.interface.http")) {
      add("run", "run is required (a source may omit it only when it has a timer or HTTP interface prop, whose events it then emits)");
    }
  }

  const additionalProps = f["additionalProps"] !== undefined;
  if (additionalProps && !isFn(f["additionalProps"]))
    add("additionalProps", `additionalProps must be a method returning prop definitions, got ${kindOf(f["additionalProps"])}`);

  let dedupe: ComponentMeta["dedupe"];
  if (f["dedupe"] !== undefined) {
    if (type === "action") add("dedupe", "dedupe is only allowed on sources");
    else if (typeof f["dedupe"] !== "string" || !DEDUPE.has(f["dedupe"]))
      add("dedupe", `dedupe must be "unique", "greatest" or "last", got ${JSON.stringify(f["dedupe"]) ?? kindOf(f["dedupe"])}`);
    else dedupe = f["dedupe"] as ComponentMeta["dedupe"];
  }

  const hooks: string[] = [];
  if (f["hooks"] !== undefined) {
    if (type === "action") add("hooks", "hooks are only allowed on sources");
    else if (!isRec(f["hooks"]) || isFn(f["hooks"]))
      add("hooks", `hooks must be an object with deploy, activate, deactivate methods, got ${kindOf(f["hooks"])}`);
    else {
      for (const [hook, v] of Object.entries(f["hooks"])) {
        if (!HOOKS.has(hook)) add(`hooks.${hook}`, `unknown hook "${hook}" (deploy, activate, deactivate)`);
        else if (!isFn(v)) add(`hooks.${hook}`, `hooks.${hook} must be a function, got ${kindOf(v)}`);
        else hooks.push(hook);
      }
    }
  }

  if (problems.length > 0) return { problems };
  return {
    problems,
    meta: {
      name: name!,
      ...(key !== undefined ? { key } : {}),
      version: version!,
      type,
      ...(description !== undefined ? { description } : {}),
      ...(dedupe ? { dedupe } : {}),
      hooks,
      methods,
      hasRun,
      props,
      ...(additionalProps ? { additionalProps: true } : {}),
    },
  };
}

/**
 * What an action's additionalProps() returned (described in the isolate like props), checked with
 * the same rules as the component's own props. Problem paths are `props.<name>…`.
 */
export function validateAdditionalProps(
  described: unknown,
  componentType: ComponentType,
): { problems: Problem[]; props: NormalizedProp[] } {
  const problems: Problem[] = [];
  const props: NormalizedProp[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });
  if (!isRec(described))
    return { problems: [{ path: "props", message: "additionalProps() must return an object of prop definitions" }], props };
  for (const [name, entry] of Object.entries(described)) {
    const prop = validateProp(name, isRec(entry) ? entry : {}, componentType, add);
    if (prop) props.push(prop);
  }
  return { problems, props };
}

function validateOption(item: unknown): boolean {
  if (typeof item === "string" || typeof item === "number" || typeof item === "boolean") return true;
  return (
    isRec(item) &&
    !isFn(item) &&
    typeof item["label"] === "string" &&
    item["value"] !== undefined &&
    kindOf(item["value"]) !== "undefined" &&
    kindOf(item["value"]) !== "function"
  );
}

function checkDefault(type: string, value: unknown): string | undefined {
  const k = kindOf(value);
  const base = type.endsWith("[]") ? type.slice(0, -2) : type;
  const scalarOk = (v: unknown) =>
    base === "string"
      ? typeof v === "string"
      : base === "integer"
        ? Number.isInteger(v)
        : base === "boolean"
          ? typeof v === "boolean"
          : true;
  if (type.endsWith("[]")) {
    if (!Array.isArray(value)) return `default must be an array, got ${k}`;
    return value.every(scalarOk) ? undefined : `default must be an array of ${base} values`;
  }
  if (type === "$.interface.timer") {
    if (!isRec(value)) return `default must be an object with intervalSeconds or cron, got ${k}`;
    const interval = value["intervalSeconds"];
    const cron = value["cron"];
    if (interval === undefined && cron === undefined) return "default must have intervalSeconds (integer) or cron (string)";
    if (interval !== undefined && !(Number.isInteger(interval) && (interval as number) > 0))
      return "intervalSeconds must be a positive integer";
    if (cron !== undefined && typeof cron !== "string") return "cron must be a string";
    if (value["timezone"] !== undefined && typeof value["timezone"] !== "string") return "timezone must be a string";
    return undefined;
  }
  if (type === "http_request")
    return isRec(value) && !isFn(value) ? undefined : `default must be an object such as { method: "GET" }, got ${k}`;
  if (base === "string" || base === "integer" || base === "boolean")
    return scalarOk(value) ? undefined : `default must be ${base === "integer" ? "an integer" : `a ${base}`}, got ${k}`;
  if (k === "function") return "default must be a value, not a function";
  return undefined;
}

function validateProp(
  name: string,
  entry: Rec,
  componentType: ComponentType,
  add: (path: string, message: string) => void,
): NormalizedProp | undefined {
  const path = `props.${name}`;
  if (typeof entry["invalid"] === "string") {
    add(path, entry["invalid"]);
    return undefined;
  }
  const def = isRec(entry["def"]) ? entry["def"] : {};
  const before = { count: 0 };
  const problem = (p: string, m: string) => {
    before.count++;
    add(p, m);
  };
  const pd = isRec(entry["propDefinition"]) ? entry["propDefinition"] : undefined;
  if (pd) {
    if (pd["appIsApp"] !== true)
      problem(`${path}.propDefinition`, "propDefinition must be [app, name, inputValues?] with an app object first");
    else if (typeof pd["name"] !== "string")
      problem(`${path}.propDefinition`, "the second element of propDefinition must be a prop definition name");
    else if (pd["found"] !== true)
      problem(
        `${path}.propDefinition`,
        `app "${typeof pd["app"] === "string" ? pd["app"] : "?"}" has no propDefinition "${typeof pd["name"] === "string" ? pd["name"] : "?"}"`,
      );
  }
  const type = def["type"];
  if (type === undefined) {
    if (!pd || pd["found"] === true) problem(`${path}.type`, "type is required");
    return undefined;
  }
  if (typeof type !== "string") {
    problem(`${path}.type`, `type must be a string, got ${kindOf(type)}`);
    return undefined;
  }
  const isArray = type.endsWith("[]");
  const base = isArray ? type.slice(0, -2) : type;
  const rule = PROP_TYPES[base];
  if (!rule && base === "$.interface.apphook") {
    problem(
      `${path}.type`,
      `"$.interface.apphook" props are not offered: Pipedream's app hooks are its own integrations with each app; a source here receives an app's events at its HTTP endpoint ($.interface.http, a webhook it registers in a hook) or polls on a timer`,
    );
    return undefined;
  }
  if (!rule && base === "data_store") {
    problem(
      `${path}.type`,
      `"data_store" props are not offered: Pipedream's data stores are its own hosted key-value service; a source keeps its state in this.db ($.service.db), and an action can keep data in a store of its own reached over HTTP`,
    );
    return undefined;
  }
  if (!rule) {
    problem(
      `${path}.type`,
      `unknown prop type "${type}" (app, boolean, integer, string, object, any, alert, dir, http_request, $.interface.http, $.interface.timer, $.service.db)`,
    );
    return undefined;
  }
  if (isArray && !rule.array) problem(`${path}.type`, `"${type}": ${base} props cannot be arrays`);
  if (componentType === "source" && !rule.source) problem(`${path}.type`, `${base} props are only allowed in actions`);
  if (componentType === "action" && !rule.action) problem(`${path}.type`, `${base} props are only allowed in sources`);

  for (const field of ["label", "description"]) {
    if (def[field] !== undefined && typeof def[field] !== "string")
      problem(`${path}.${field}`, `${field} must be a string, got ${kindOf(def[field])}`);
  }
  if (def["optional"] !== undefined && typeof def["optional"] !== "boolean")
    problem(`${path}.optional`, `optional must be a boolean, got ${kindOf(def["optional"])}`);
  if (def["secret"] !== undefined) {
    if (typeof def["secret"] !== "boolean") problem(`${path}.secret`, `secret must be a boolean, got ${kindOf(def["secret"])}`);
    else if (def["secret"] && type !== "string") problem(`${path}.secret`, `secret is only allowed on string props, not ${type}`);
  }
  for (const bound of ["min", "max"]) {
    const v = def[bound];
    if (v === undefined) continue;
    if (base !== "integer") problem(`${path}.${bound}`, `${bound} is only allowed on integer props, not ${type}`);
    else if (!Number.isInteger(v))
      problem(`${path}.${bound}`, `${bound} must be an integer, got ${typeof v === "number" ? String(v) : kindOf(v)}`);
  }
  if (
    Number.isInteger(def["min"]) &&
    Number.isInteger(def["max"]) &&
    (def["min"] as number) > (def["max"] as number) &&
    base === "integer"
  ) {
    problem(`${path}.min`, `min (${String(def["min"])}) is greater than max (${String(def["max"])})`);
  }
  let options: NormalizedProp["options"];
  if (def["options"] !== undefined) {
    const o = def["options"];
    if (isFn(o)) options = "dynamic";
    else if (Array.isArray(o)) {
      let ok = true;
      o.forEach((item, i) => {
        if (!validateOption(item)) {
          ok = false;
          problem(`${path}.options[${i}]`, `an option must be a string or an object with a string label and a value, got ${kindOf(item)}`);
        }
      });
      if (ok) options = o as PropOption[];
    } else
      problem(
        `${path}.options`,
        `options must be an array of strings, an array of { label, value } objects, or an async method; got ${kindOf(o)}`,
      );
  }
  if (base === "app") {
    if (typeof def["app"] !== "string" || def["app"] === "") problem(`${path}.app`, "app props need app: the app's name slug (a string)");
    if (def["propDefinitions"] !== undefined && !isRec(def["propDefinitions"]))
      problem(`${path}.propDefinitions`, "propDefinitions must be an object");
    if (def["methods"] !== undefined && (!isRec(def["methods"]) || isFn(def["methods"])))
      problem(`${path}.methods`, "methods must be an object of functions");
  }
  if (base === "$.interface.http" && def["customResponse"] !== undefined && typeof def["customResponse"] !== "boolean") {
    problem(`${path}.customResponse`, `customResponse must be a boolean, got ${kindOf(def["customResponse"])}`);
  }
  const hasDefault = def["default"] !== undefined && kindOf(def["default"]) !== "undefined";
  if (hasDefault && rule && base !== "app" && base !== "$.service.db" && base !== "$.interface.http") {
    const msg = checkDefault(type, def["default"]);
    if (msg) problem(`${path}.default`, msg);
  }
  if (before.count > 0) return undefined;
  return {
    name,
    type,
    ...(typeof def["label"] === "string" ? { label: def["label"] } : {}),
    ...(typeof def["description"] === "string" ? { description: def["description"] } : {}),
    optional: def["optional"] === true,
    ...(hasDefault && base !== "app" && base !== "$.service.db" && base !== "$.interface.http" ? { default: def["default"] } : {}),
    secret: def["secret"] === true,
    ...(Number.isInteger(def["min"]) ? { min: def["min"] as number } : {}),
    ...(Number.isInteger(def["max"]) ? { max: def["max"] as number } : {}),
    ...(options !== undefined ? { options } : {}),
    ...(base === "app" ? { app: def["app"] as string } : {}),
    ...(base === "$.interface.http" ? { customResponse: def["customResponse"] === true } : {}),
    ...(def["reloadProps"] === true ? { reloadProps: true } : {}),
    ...(def["withLabel"] === true ? { withLabel: true } : {}),
    ...(pd && typeof pd["app"] === "string" && typeof pd["name"] === "string"
      ? { propDefinition: { app: pd["app"], name: pd["name"] } }
      : {}),
  };
}
