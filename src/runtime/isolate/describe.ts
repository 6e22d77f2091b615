// A JSON description of the loaded component for validation on the host: functions become
// markers, app objects in propDefinition are resolved here where their identity is known.
import { componentProps, isRecord, type AnyRecord } from "./component.js";

export type Described = unknown;

export function describeValue(v: unknown, depth = 0): Described {
  switch (typeof v) {
    case "function":
      return { $fn: true, async: (v as { constructor?: { name?: string } }).constructor?.name === "AsyncFunction" };
    case "number":
      return Number.isFinite(v) ? v : { $number: String(v) };
    case "string":
    case "boolean":
      return v;
    case "undefined":
      return { $undefined: true };
    case "bigint":
    case "symbol":
      return { $type: typeof v };
  }
  if (v === null) return null;
  if (depth > 5) return { $deep: true };
  if (Array.isArray(v)) return v.slice(0, 1000).map((item) => describeValue(item, depth + 1));
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    return { $object: (proto?.constructor as { name?: string } | undefined)?.name ?? "Object" };
  }
  const out: AnyRecord = {};
  for (const key of Object.keys(v as object).slice(0, 500)) {
    const item = (v as AnyRecord)[key];
    if (item === undefined) continue;
    out[key] = describeValue(item, depth + 1);
  }
  return out;
}

export function describeComponent(component: unknown): AnyRecord {
  if (!isRecord(component)) {
    return { exportKind: component === null ? "null" : Array.isArray(component) ? "array" : typeof component };
  }
  const fields: AnyRecord = {};
  for (const key of Object.keys(component)) {
    if (key === "props") continue;
    fields[key] = describeValue(component[key], 1);
  }
  const rawProps = component["props"];
  const props = describeProps(rawProps);
  return {
    exportKind: "object",
    fields,
    propsKind: rawProps === undefined ? "absent" : isRecord(rawProps) ? "object" : Array.isArray(rawProps) ? "array" : typeof rawProps,
    props,
  };
}

/** Prop definitions as the host validates them (validate.ts validateProp): each resolved, then described. */
export function describeProps(rawProps: unknown): AnyRecord {
  const props: AnyRecord = {};
  for (const [name, resolved] of componentProps({ props: rawProps })) {
    props[name] = {
      raw: typeof resolved.raw === "string" ? resolved.raw : { $kind: Array.isArray(resolved.raw) ? "array" : typeof resolved.raw },
      def: describeValue(resolved.def, 1),
      ...(resolved.invalid ? { invalid: resolved.invalid } : {}),
      ...(resolved.propDefinition
        ? {
            propDefinition: {
              appIsApp: resolved.propDefinition.appIsApp,
              app: resolved.propDefinition.appName,
              name:
                typeof resolved.propDefinition.name === "string"
                  ? resolved.propDefinition.name
                  : describeValue(resolved.propDefinition.name),
              found: resolved.propDefinition.found,
            },
          }
        : {}),
    };
  }
  return props;
}
