// Built-ins captured before any component code runs, so a component that replaces JSON, Object,
// Array, String, Map, Function or Promise members in its own isolate cannot make the platform's
// bookkeeping lie or fail. Code that runs after user code (the end of every invocation, and all of
// a warm isolate's next invocation) uses only these: no method calls on prototypes, no globals.
export const stringify = JSON.stringify;
export const parse = JSON.parse;
export const objectKeys = Object.keys;
export const objectEntries = Object.entries;
export const ObjectCreate = Object.create;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectFreeze = Object.freeze;
export const ReflectApply = Reflect.apply;
export const hasOwn = Object.hasOwn;
export const ArrayIsArray = Array.isArray;
export const StringCtor = String;
export const PromiseCtor = Promise;
export const DateNow = Date.now;
export const DateCtor = Date;
export const DateToISOString = Date.prototype.toISOString;
export const ErrorCtor = Error;
export const RangeErrorCtor = RangeError;
export const MapCtor = Map;
export const SetCtor = Set;
export const NumberIsFinite = Number.isFinite;
export const ObjectSetPrototypeOf = Object.setPrototypeOf;
export const StringFromCharCode = String.fromCharCode;

// uncurry(fn)(self, ...args) calls fn with `this` = self through a bound copy of the original
// Function.prototype.call, so replacing call/apply/bind later changes nothing.
const uncurry = Function.prototype.bind.bind(Function.prototype.call) as <A extends unknown[], R>(
  fn: (...args: A) => R,
) => (self: unknown, ...args: A) => R;

export const StringPrototypeSlice = uncurry(String.prototype.slice);
export const StringPrototypeLastIndexOf = uncurry(String.prototype.lastIndexOf);
export const StringPrototypeCharCodeAt = uncurry(String.prototype.charCodeAt);
export const TypedArrayByteLength = uncurry(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype) as object, "byteLength")!.get!,
) as (self: Uint8Array) => number;
export const MapPrototypeGet = uncurry(Map.prototype.get) as <K, V>(self: Map<K, V>, key: K) => V | undefined;
export const MapPrototypeSet = uncurry(Map.prototype.set) as <K, V>(self: Map<K, V>, key: K, value: V) => Map<K, V>;
export const MapPrototypeDelete = uncurry(Map.prototype.delete) as <K, V>(self: Map<K, V>, key: K) => boolean;
export const MapPrototypeClear = uncurry(Map.prototype.clear) as <K, V>(self: Map<K, V>) => void;
export const MapPrototypeSize = uncurry(Object.getOwnPropertyDescriptor(Map.prototype, "size")!.get!) as <K, V>(self: Map<K, V>) => number;
export const MapPrototypeForEach = uncurry(Map.prototype.forEach) as <K, V>(self: Map<K, V>, fn: (value: V, key: K) => void) => void;
const PromisePrototypeThen = Promise.prototype.then;
/** promise.then(onFulfilled, onRejected) with the original then (its species: pin the promise's constructor first). */
export const PromiseThen = uncurry(PromisePrototypeThen) as <T, R>(
  self: Promise<T>,
  onFulfilled: ((value: T) => R) | undefined,
  onRejected: (reason: unknown) => R,
) => Promise<T | R>;

/**
 * target[key] = value as an own data property. Assignment would call a setter the component
 * defined on a prototype; the descriptor has no prototype, so an inherited `get` or `set` (say
 * Object.prototype.get) cannot turn it into an invalid or accessor descriptor.
 */
export function defineValue(target: object, key: PropertyKey, value: unknown, enumerable = true): void {
  const descriptor = ObjectCreate(null) as PropertyDescriptor;
  descriptor.value = value;
  descriptor.writable = enumerable;
  descriptor.enumerable = enumerable;
  descriptor.configurable = true;
  ObjectDefineProperty(target, key, descriptor);
}

/** arr.push(value) without Array.prototype: push would call an index setter defined there. */
export function append<T>(arr: T[], value: T): void {
  defineValue(arr, arr.length, value);
}

/** A string cut to at most `max` UTF-16 units, with primordials only. */
export function cut(text: string, max: number): string {
  return text.length > max ? StringPrototypeSlice(text, 0, max) : text;
}

/** JSON text of a string (a primitive: JSON.stringify consults no toJSON and no prototype). */
export function quote(text: string): string {
  return stringify(text);
}

/**
 * Awaiting a native promise reads its `constructor`; when that is not %Promise% (a component can
 * replace Promise.prototype.constructor), await falls back to the promise's `then`, which the
 * component may have replaced too. An own `constructor` keeps await on the internal path, so the
 * promise's real settlement is what the platform sees. False when the value cannot take one.
 */
export function pinConstructor(value: object, constructor: unknown): boolean {
  try {
    defineValue(value, "constructor", constructor, false);
    return true;
  } catch {
    return false;
  }
}

/**
 * The promise class of the invocation entry's promise (its own `constructor`). isolated-vm waits
 * for that promise with V8's then and catch, which look up the species constructor and, on the
 * derived promise, `then`: here both are own, frozen and the originals, where on Promise they are
 * the component's to replace.
 */
export class SafePromise<T> extends PromiseCtor<T> {
  constructor(executor: (resolve: (value: T) => void, reject: (reason?: unknown) => void) => void) {
    super(executor);
  }
}
defineValue(SafePromise, Symbol.species, SafePromise, false);
defineValue(SafePromise.prototype, "then", PromisePrototypeThen, false);
// Freezing returns its argument, here a promise type: nothing to await.
void ObjectFreeze(SafePromise.prototype);
void ObjectFreeze(SafePromise);
