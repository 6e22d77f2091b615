// Strict JSON checks: values the platform stores or emits must survive JSON unchanged in meaning.
import { parse, stringify } from "./primordials.js";
/** Throws a TypeError naming the first part of `value` that JSON cannot carry. */
export function assertJsonSerializable(value: unknown, what: string): void {
  const stack: unknown[] = [];
  const walk = (v: unknown, path: string): void => {
    switch (typeof v) {
      case "function":
      case "symbol":
      case "bigint":
        throw new TypeError(`${what}: ${path || "the value"} is a ${typeof v}, which is not JSON-serializable`);
      case "number":
        if (!Number.isFinite(v)) throw new TypeError(`${what}: ${path || "the value"} is ${v}, which is not JSON-serializable`);
        return;
      case "object": {
        if (v === null) return;
        if (typeof (v as { toJSON?: unknown }).toJSON === "function") return;
        if (stack.includes(v)) throw new TypeError(`${what}: ${path || "the value"} contains a circular reference`);
        if (v instanceof Map || v instanceof Set) {
          throw new TypeError(`${what}: ${path || "the value"} is a ${v instanceof Map ? "Map" : "Set"}, which JSON cannot carry`);
        }
        stack.push(v);
        if (Array.isArray(v)) v.forEach((item, i) => walk(item, `${path}[${i}]`));
        else for (const [k, item] of Object.entries(v)) if (item !== undefined) walk(item, path ? `${path}.${k}` : k);
        stack.pop();
        return;
      }
      default:
        return;
    }
  };
  walk(value, "");
}

export function jsonSafe(value: unknown): unknown {
  if (value === undefined) return undefined;
  try {
    const text = stringify(value);
    return text === undefined ? undefined : parse(text);
  } catch {
    return String(value);
  }
}
