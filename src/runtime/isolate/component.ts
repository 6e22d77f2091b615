// The loaded component and how its props read: shorthand strings, propDefinition from an app,
// a timer's schedule written on the prop itself (or as its `static` schedule).

import { ArrayIsArray, defineValue, hasOwn, objectKeys } from "./primordials.js";

export type AnyRecord = Record<string, unknown>;

export interface ResolvedProp {
  /** The prop definition after expansion (functions kept). */
  def: AnyRecord;
  /** The raw value as written (string shorthand, object, app object). */
  raw: unknown;
  propDefinition?: { app: unknown; appName: string | undefined; appIsApp: boolean; name: unknown; found: boolean };
  invalid?: string;
}

export function isRecord(v: unknown): v is AnyRecord {
  return typeof v === "object" && v !== null && !ArrayIsArray(v);
}

export function resolveProp(raw: unknown): ResolvedProp {
  if (typeof raw === "string") return { def: { type: raw }, raw };
  if (!isRecord(raw))
    return { def: {}, raw, invalid: `a prop must be an object or a type string, got ${Array.isArray(raw) ? "array" : typeof raw}` };
  if (raw["type"] === "app") return { def: raw, raw };
  let def: AnyRecord = raw;
  let propDefinition: ResolvedProp["propDefinition"];
  if (raw["propDefinition"] !== undefined) {
    const pd = raw["propDefinition"];
    const app: unknown = ArrayIsArray(pd) ? pd[0] : undefined;
    const name: unknown = ArrayIsArray(pd) ? pd[1] : undefined;
    const appIsApp = isRecord(app) && app["type"] === "app";
    const defs = appIsApp ? app["propDefinitions"] : undefined;
    const base = isRecord(defs) && typeof name === "string" && hasOwn(defs, name) ? defs[name] : undefined;
    propDefinition = {
      app,
      appName: appIsApp && typeof app["app"] === "string" ? app["app"] : undefined,
      appIsApp,
      name,
      found: isRecord(base),
    };
    const { propDefinition: _omit, ...local } = raw;
    void _omit;
    def = { ...(isRecord(base) ? base : {}), ...local };
  }
  if (def["type"] === "$.interface.timer" && def["default"] === undefined) {
    // A timer the component fixes (`static`, often `hidden`): its schedule, as a default.
    if (isRecord(def["static"])) def = { ...def, default: def["static"] };
    else if (def["intervalSeconds"] !== undefined) def = { ...def, default: { intervalSeconds: def["intervalSeconds"] } };
    else if (def["cron"] !== undefined) def = { ...def, default: { cron: def["cron"] } };
  }
  return { def, raw, ...(propDefinition ? { propDefinition } : {}) };
}

export function componentProps(component: AnyRecord): [string, ResolvedProp][] {
  const props = component["props"];
  if (!isRecord(props)) return [];
  // Primordials only: this runs again in a warm isolate, after the component's own code.
  const names = objectKeys(props);
  const out: [string, ResolvedProp][] = [];
  for (let i = 0; i < names.length; i++) defineValue(out, i, [names[i], resolveProp(props[names[i]])]);
  return out;
}

/** The exported component: `export default` for ES modules, module.exports for CommonJS. */
export function exportedComponent(moduleExports: unknown): unknown {
  if (isRecord(moduleExports) && moduleExports["__esModule"] === true) return moduleExports["default"];
  if (isRecord(moduleExports) && Object.keys(moduleExports).length === 1 && isRecord(moduleExports["default"]))
    return moduleExports["default"];
  return moduleExports;
}
