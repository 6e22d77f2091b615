// Strict JSON checks: values the platform stores or emits must survive JSON unchanged in meaning.
import { MAX_JSON_DEPTH } from "../../json/bounded.js";

/** Thrown when a value is nested deeper than MAX_JSON_DEPTH (checked before recursing further). */
export class JsonDepthError extends RangeError {
  override name = "JsonDepthError";
}

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
        if (stack.length >= MAX_JSON_DEPTH) throw new JsonDepthError(`${what}: the value is nested deeper than ${MAX_JSON_DEPTH} levels`);
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
