// Strict JSON checks: values the platform stores or emits must survive JSON unchanged in meaning.
import { MAX_JSON_DEPTH } from "../../json/bounded.js";
import { append, ArrayIsArray, MapCtor, NumberIsFinite, objectKeys, SetCtor } from "./primordials.js";

/** Thrown when a value is nested deeper than MAX_JSON_DEPTH (checked before recursing further). */
export class JsonDepthError extends RangeError {
  override name = "JsonDepthError";
}

/**
 * Throws a TypeError naming the first part of `value` that JSON cannot carry. Primordials only,
 * so replaced Array or Object members do not change what db.set accepts.
 */
export function assertJsonSerializable(value: unknown, what: string): void {
  const stack: unknown[] = [];
  const onStack = (v: unknown): boolean => {
    for (let i = 0; i < stack.length; i++) if (stack[i] === v) return true;
    return false;
  };
  const walk = (v: unknown, path: string): void => {
    switch (typeof v) {
      case "function":
      case "symbol":
      case "bigint":
        throw new TypeError(`${what}: ${path || "the value"} is a ${typeof v}, which is not JSON-serializable`);
      case "number":
        if (!NumberIsFinite(v)) throw new TypeError(`${what}: ${path || "the value"} is ${v}, which is not JSON-serializable`);
        return;
      case "object": {
        if (v === null) return;
        if (typeof (v as { toJSON?: unknown }).toJSON === "function") return;
        if (onStack(v)) throw new TypeError(`${what}: ${path || "the value"} contains a circular reference`);
        if (v instanceof MapCtor || v instanceof SetCtor) {
          throw new TypeError(`${what}: ${path || "the value"} is a ${v instanceof MapCtor ? "Map" : "Set"}, which JSON cannot carry`);
        }
        if (stack.length >= MAX_JSON_DEPTH) throw new JsonDepthError(`${what}: the value is nested deeper than ${MAX_JSON_DEPTH} levels`);
        append(stack, v);
        if (ArrayIsArray(v)) {
          for (let i = 0; i < v.length; i++) walk(v[i], `${path}[${i}]`);
        } else {
          const names = objectKeys(v);
          for (let i = 0; i < names.length; i++) {
            const item = (v as Record<string, unknown>)[names[i]];
            if (item !== undefined) walk(item, path ? `${path}.${names[i]}` : names[i]);
          }
        }
        stack.length--;
        return;
      }
      default:
        return;
    }
  };
  walk(value, "");
}
