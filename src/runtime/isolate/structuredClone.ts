// structuredClone as the HTML standard's algorithm does it (Node's global, which the isolate's
// engine does not give): primitives (BigInt and undefined included), Date, RegExp, boxed
// primitives, ArrayBuffer and its views (views of one buffer stay views of one copy), Map, Set,
// errors (name, message, stack, cause), arrays and plain objects (own enumerable string keys, a
// class instance becoming a plain object), with shared and cyclic references kept. What cannot be
// cloned (functions, symbols, promises, weak collections, proxies' targets that are such) throws a
// DOMException named DataCloneError, as Node's does.

type Throw = (message: string) => never;

const UNCLONEABLE = new Set([
  "Promise",
  "WeakMap",
  "WeakSet",
  "WeakRef",
  "FinalizationRegistry",
  "Generator",
  "AsyncGenerator",
  "Symbol",
  "Function",
  "AsyncFunction",
]);
const ERROR_NAMES = new Set(["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"]);
const ERRORS: Record<string, ErrorConstructor> = {
  Error,
  EvalError,
  RangeError,
  ReferenceError,
  SyntaxError,
  TypeError,
  URIError,
};

export function cloneStructured(value: unknown, dataCloneError: Throw): unknown {
  const memory = new Map<object, unknown>();
  const tag = (v: object): string => Object.prototype.toString.call(v).slice(8, -1);

  const clone = (v: unknown): unknown => {
    if (typeof v === "function") dataCloneError(`${describe(v)} could not be cloned.`);
    if (typeof v === "symbol") dataCloneError(`${String(v)} could not be cloned.`);
    if (typeof v !== "object" || v === null) return v;
    const seen = memory.get(v);
    if (seen !== undefined || memory.has(v)) return seen;
    const kind = tag(v);
    switch (kind) {
      case "Boolean":
      case "Number":
      case "String":
      case "BigInt": {
        const copy = Object(v.valueOf());
        memory.set(v, copy);
        return copy;
      }
      case "Date": {
        const copy = new Date((v as Date).getTime());
        memory.set(v, copy);
        return copy;
      }
      case "RegExp": {
        const copy = new RegExp((v as RegExp).source, (v as RegExp).flags);
        memory.set(v, copy);
        return copy;
      }
      case "ArrayBuffer": {
        const copy = (v as ArrayBuffer).slice(0);
        memory.set(v, copy);
        return copy;
      }
      case "Map": {
        const copy = new Map();
        memory.set(v, copy);
        for (const [key, item] of v as Map<unknown, unknown>) copy.set(clone(key), clone(item));
        return copy;
      }
      case "Set": {
        const copy = new Set();
        memory.set(v, copy);
        for (const item of v as Set<unknown>) copy.add(clone(item));
        return copy;
      }
      case "Error": {
        const error = v as Error & { cause?: unknown };
        const name = ERROR_NAMES.has(String(error.name)) ? String(error.name) : "Error";
        const copy = new ERRORS[name](String(error.message ?? ""));
        memory.set(v, copy);
        if (typeof error.stack === "string")
          Object.defineProperty(copy, "stack", { value: error.stack, writable: true, configurable: true });
        if ("cause" in error) Object.defineProperty(copy, "cause", { value: clone(error.cause), writable: true, configurable: true });
        return copy;
      }
      case "Array": {
        const source = v as unknown[];
        const copy: unknown[] = new Array(source.length);
        memory.set(v, copy);
        for (const key of Object.keys(source))
          (copy as unknown as Record<string, unknown>)[key] = clone((source as unknown as Record<string, unknown>)[key]);
        return copy;
      }
      case "Object":
        return cloneObject(v);
      default:
        if (ArrayBuffer.isView(v)) {
          const view = v;
          const buffer = clone(view.buffer) as ArrayBuffer;
          const copy =
            view instanceof DataView
              ? new DataView(buffer, view.byteOffset, view.byteLength)
              : new (view.constructor as new (b: ArrayBuffer, o: number, l: number) => ArrayBufferView)(
                  buffer,
                  view.byteOffset,
                  (view as unknown as { length: number }).length,
                );
          memory.set(v, copy);
          return copy;
        }
        // Objects with internal state a copy of their properties would not carry.
        if (UNCLONEABLE.has(kind)) dataCloneError(`${describe(v)} could not be cloned.`);
        // Anything else (a class instance with its own Symbol.toStringTag) is copied as a plain
        // object, as its properties are all a clone keeps of any instance.
        return cloneObject(v);
    }
  };
  const cloneObject = (v: object): Record<string, unknown> => {
    const copy: Record<string, unknown> = {};
    memory.set(v, copy);
    for (const key of Object.keys(v)) copy[key] = clone((v as Record<string, unknown>)[key]);
    return copy;
  };
  return clone(value);
}

function describe(v: unknown): string {
  if (typeof v === "function") return `${Function.prototype.toString.call(v).slice(0, 60)}`;
  return Object.prototype.toString.call(v);
}
