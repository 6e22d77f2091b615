// The util subset: format (used by console), inspect, promisify, inherits, deprecate, types.
import { TextDecoder, TextEncoder } from "../textCodec.js";

export const inspectCustom = Symbol.for("nodejs.util.inspect.custom");

interface InspectOptions {
  depth?: number;
  breakLength?: number;
}

function quote(s: string): string {
  return `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n")}'`;
}

function keyText(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? key : quote(key);
}

export function inspect(value: unknown, options: InspectOptions = {}): string {
  const depth = options.depth ?? 2;
  const seen: object[] = [];
  const go = (v: unknown, level: number): string => {
    switch (typeof v) {
      case "string":
        return level === 0 ? quote(v) : quote(v);
      case "number":
        return Object.is(v, -0) ? "-0" : String(v);
      case "bigint":
        return `${v}n`;
      case "boolean":
      case "undefined":
        return String(v);
      case "symbol":
        return v.toString();
      case "function": {
        const name = (v as { name?: string }).name;
        const isClass = /^class\s/.test(Function.prototype.toString.call(v));
        return isClass ? `[class ${name || "(anonymous)"}]` : `[Function: ${name || "(anonymous)"}]`;
      }
    }
    if (v === null) return "null";
    const obj = v as Record<string | symbol, unknown>;
    const custom = obj[inspectCustom];
    if (typeof custom === "function") {
      try {
        const out = (custom as (d: number, o: InspectOptions) => unknown).call(obj, depth - level, options);
        if (typeof out === "string") return out;
        return go(out, level);
      } catch {
        /* fall through to the generic form */
      }
    }
    if (seen.includes(obj)) return "[Circular]";
    if (v instanceof Error) return v.stack ? String(v.stack) : `${v.name}: ${v.message}`;
    if (v instanceof Date) return isNaN(v.getTime()) ? "Invalid Date" : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (typeof Promise !== "undefined" && v instanceof Promise) return "Promise { <pending> }";
    const isArray = Array.isArray(v);
    if (level > depth) return isArray ? "[Array]" : "[Object]";
    seen.push(obj);
    try {
      let parts: string[];
      let open: string;
      let close: string;
      if (isArray) {
        const arr = v as unknown[];
        parts = arr.slice(0, 100).map((item) => go(item, level + 1));
        if (arr.length > 100) parts.push(`... ${arr.length - 100} more items`);
        [open, close] = ["[", "]"];
      } else if (v instanceof Map) {
        parts = [...v.entries()].slice(0, 100).map(([k, val]) => `${go(k, level + 1)} => ${go(val, level + 1)}`);
        [open, close] = [`Map(${v.size}) {`, "}"];
      } else if (v instanceof Set) {
        parts = [...v.values()].slice(0, 100).map((item) => go(item, level + 1));
        [open, close] = [`Set(${v.size}) {`, "}"];
      } else if (ArrayBuffer.isView(v)) {
        const bytes = Array.from(new Uint8Array(v.buffer, v.byteOffset, Math.min(v.byteLength, 50)));
        const name = (v.constructor as { name?: string })?.name ?? "Uint8Array";
        if (name === "Buffer")
          return `<Buffer ${bytes.map((b) => b.toString(16).padStart(2, "0")).join(" ")}${v.byteLength > 50 ? " ..." : ""}>`;
        parts = bytes.map(String);
        [open, close] = [`${name}(${v.byteLength}) [`, "]"];
      } else {
        const proto = Object.getPrototypeOf(v);
        const ctor = proto && proto !== Object.prototype ? (proto.constructor as { name?: string } | undefined)?.name : undefined;
        const keys = Object.keys(obj);
        parts = keys.slice(0, 100).map((k) => `${keyText(k)}: ${go(obj[k], level + 1)}`);
        if (keys.length > 100) parts.push(`... ${keys.length - 100} more properties`);
        const prefix = proto === null ? "[Object: null prototype] " : ctor ? `${ctor} ` : "";
        if (parts.length === 0) return `${prefix}{}`;
        [open, close] = [`${prefix}{`, "}"];
      }
      if (parts.length === 0) return `${open}${close}`;
      const oneLine = `${open} ${parts.join(", ")} ${close}`;
      if (oneLine.length <= (options.breakLength ?? 80)) return oneLine;
      const pad = "  ".repeat(level + 1);
      return `${open}\n${parts.map((p) => pad + p).join(",\n")}\n${"  ".repeat(level)}${close}`;
    } finally {
      seen.pop();
    }
  };
  return go(value, 0);
}
inspect.custom = inspectCustom;

export function format(...args: unknown[]): string {
  const first = args[0];
  let out = "";
  let rest = args;
  if (typeof first === "string") {
    rest = args.slice(1);
    let i = 0;
    out = first.replace(/%[sdifjoOc%]/g, (token) => {
      if (token === "%%") return "%";
      if (i >= rest.length) return token;
      const arg = rest[i++];
      switch (token) {
        case "%s":
          return typeof arg === "string" ? arg : typeof arg === "object" && arg !== null ? inspect(arg, { depth: 1 }) : String(arg);
        case "%d":
          return typeof arg === "bigint" ? `${arg}n` : String(Number(arg));
        case "%i":
          return String(parseInt(String(arg), 10));
        case "%f":
          return String(parseFloat(String(arg)));
        case "%j":
          try {
            return JSON.stringify(arg);
          } catch {
            return "[Circular]";
          }
        case "%c":
          return "";
        default:
          return inspect(arg, { depth: 4 });
      }
    });
    rest = rest.slice(i);
  } else if (args.length > 0) {
    out = inspect(first);
    rest = args.slice(1);
  }
  for (const arg of rest) out += " " + (typeof arg === "string" ? arg : inspect(arg));
  return out;
}

export function promisify<T>(fn: (...args: unknown[]) => unknown): (...args: unknown[]) => Promise<T> {
  if (typeof fn !== "function") throw new TypeError('The "original" argument must be of type function');
  const custom = (fn as unknown as Record<symbol, unknown>)[Symbol.for("nodejs.util.promisify.custom")];
  if (typeof custom === "function") return custom as (...args: unknown[]) => Promise<T>;
  return function (this: unknown, ...args: unknown[]) {
    return new Promise<T>((resolve, reject) => {
      fn.call(this, ...args, (err: unknown, value: T) => (err ? reject(err) : resolve(value)));
    });
  };
}
promisify.custom = Symbol.for("nodejs.util.promisify.custom");

export function callbackify(fn: (...args: unknown[]) => Promise<unknown>) {
  return function (this: unknown, ...args: unknown[]) {
    const cb = args.pop() as (err: unknown, value?: unknown) => void;
    fn.apply(this, args).then(
      (v) => cb(null, v),
      (e) => cb(e ?? new Error("Promise was rejected with a falsy value")),
    );
  };
}

export function inherits(ctor: { prototype: object; super_?: unknown }, superCtor: { prototype: object }): void {
  ctor.super_ = superCtor;
  Object.setPrototypeOf(ctor.prototype, superCtor.prototype);
}

export function deprecate<F extends (...args: never[]) => unknown>(fn: F): F {
  return fn;
}

export function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => isDeepStrictEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const tagOf = (v: unknown) => Object.prototype.toString.call(v).slice(8, -1);
const typedArrayTag = (v: unknown) => (ArrayBuffer.isView(v) && !(v instanceof DataView) ? tagOf(v) : undefined);
const boxed = (v: unknown, tag: string) => typeof v === "object" && v !== null && tagOf(v) === tag;

/** Node's util.types (also the module "util/types"), by the checks JavaScript allows. */
export const types = {
  isAnyArrayBuffer: (v: unknown) => v instanceof ArrayBuffer || tagOf(v) === "ArrayBuffer" || tagOf(v) === "SharedArrayBuffer",
  isArrayBuffer: (v: unknown) => v instanceof ArrayBuffer || tagOf(v) === "ArrayBuffer",
  isSharedArrayBuffer: (v: unknown) => tagOf(v) === "SharedArrayBuffer",
  isArrayBufferView: (v: unknown) => ArrayBuffer.isView(v),
  isDataView: (v: unknown) => v instanceof DataView,
  isTypedArray: (v: unknown) => typedArrayTag(v) !== undefined,
  isUint8Array: (v: unknown) => typedArrayTag(v) === "Uint8Array",
  isUint8ClampedArray: (v: unknown) => typedArrayTag(v) === "Uint8ClampedArray",
  isUint16Array: (v: unknown) => typedArrayTag(v) === "Uint16Array",
  isUint32Array: (v: unknown) => typedArrayTag(v) === "Uint32Array",
  isInt8Array: (v: unknown) => typedArrayTag(v) === "Int8Array",
  isInt16Array: (v: unknown) => typedArrayTag(v) === "Int16Array",
  isInt32Array: (v: unknown) => typedArrayTag(v) === "Int32Array",
  isFloat32Array: (v: unknown) => typedArrayTag(v) === "Float32Array",
  isFloat64Array: (v: unknown) => typedArrayTag(v) === "Float64Array",
  isBigInt64Array: (v: unknown) => typedArrayTag(v) === "BigInt64Array",
  isBigUint64Array: (v: unknown) => typedArrayTag(v) === "BigUint64Array",
  isDate: (v: unknown) => v instanceof Date || tagOf(v) === "Date",
  isRegExp: (v: unknown) => v instanceof RegExp || tagOf(v) === "RegExp",
  isPromise: (v: unknown) => v instanceof Promise || tagOf(v) === "Promise",
  isMap: (v: unknown) => v instanceof Map,
  isSet: (v: unknown) => v instanceof Set,
  isWeakMap: (v: unknown) => v instanceof WeakMap,
  isWeakSet: (v: unknown) => v instanceof WeakSet,
  isMapIterator: (v: unknown) => tagOf(v) === "Map Iterator",
  isSetIterator: (v: unknown) => tagOf(v) === "Set Iterator",
  isNativeError: (v: unknown) => v instanceof Error || tagOf(v) === "Error",
  isAsyncFunction: (v: unknown) => typeof v === "function" && (tagOf(v) === "AsyncFunction" || tagOf(v) === "AsyncGeneratorFunction"),
  isGeneratorFunction: (v: unknown) =>
    typeof v === "function" && (tagOf(v) === "GeneratorFunction" || tagOf(v) === "AsyncGeneratorFunction"),
  isGeneratorObject: (v: unknown) => tagOf(v) === "Generator" || tagOf(v) === "AsyncGenerator",
  isArgumentsObject: (v: unknown) => tagOf(v) === "Arguments",
  isBooleanObject: (v: unknown) => boxed(v, "Boolean"),
  isNumberObject: (v: unknown) => boxed(v, "Number"),
  isStringObject: (v: unknown) => boxed(v, "String"),
  isSymbolObject: (v: unknown) => boxed(v, "Symbol"),
  isBigIntObject: (v: unknown) => boxed(v, "BigInt"),
  isBoxedPrimitive: (v: unknown) => ["Boolean", "Number", "String", "Symbol", "BigInt"].some((tag) => boxed(v, tag)),
  // What JavaScript cannot see from inside: never these in the sandbox.
  isProxy: (v: unknown) => (void v, false),
  isExternal: (v: unknown) => (void v, false),
  isModuleNamespaceObject: (v: unknown) => tagOf(v) === "Module",
  isKeyObject: (v: unknown) => tagOf(v) === "KeyObject",
  isCryptoKey: (v: unknown) => tagOf(v) === "CryptoKey",
};

export const isArray = Array.isArray;

/**
 * A logger for a section, printing when NODE_DEBUG names it, which it never does in the sandbox
 * (its env holds none): a function that does nothing, `enabled` false, as Node's is then.
 */
export function debuglog(section: string): ((...args: unknown[]) => void) & { enabled: boolean } {
  void section;
  const log = Object.assign((...args: unknown[]) => void args, { enabled: false });
  return log;
}

export function formatWithOptions(options: unknown, ...args: unknown[]): string {
  void options;
  return format(...args);
}

export const debug = debuglog;

/** The string with lone surrogates replaced by U+FFFD. */
export const toUSVString = (input: unknown): string =>
  String(input).replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");

/** The text without ANSI escape codes (colours, cursor moves). */
export const stripVTControlCharacters = (input: string): string =>
  String(input).replace(
    /[\u001b\u009b][[\]()#;?]*(?:(?:(?:[a-zA-Z\d]*(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\u0007)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-ntqry=><~]))/g,
    "",
  );

export { TextDecoder, TextEncoder };

export default {
  format,
  formatWithOptions,
  debuglog,
  debug: debuglog,
  toUSVString,
  stripVTControlCharacters,
  inspect,
  promisify,
  callbackify,
  inherits,
  deprecate,
  isDeepStrictEqual,
  types,
  isArray,
  TextEncoder,
  TextDecoder,
};
