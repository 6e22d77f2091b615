// Argument reading shared by the isolate's crypto modules (crypto.ts, cryptoCipher.ts,
// cryptoDerive.ts): bytes from Node's data types, and errors worded and coded as Node's. Not a
// module user code can import: crypto.ts re-exports only Node's names.
import { Buffer } from "buffer";

export type Data = string | Uint8Array | ArrayBuffer | DataView;

export function toBytes(data: Data, encoding?: string): Uint8Array {
  if (typeof data === "string") return Buffer.from(data, (encoding ?? "utf8") as BufferEncoding);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView');
}

export function nodeError<E extends Error>(err: E, code: string): E & { code: string } {
  return Object.assign(err, { code });
}

export function describeReceived(value: unknown): string {
  if (value === null || value === undefined) return ` Received ${String(value)}`;
  if (typeof value === "object" || typeof value === "function") {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === "string" && name !== "" ? ` Received an instance of ${name}` : " Received an object";
  }
  return ` Received type ${typeof value} (${String(value).slice(0, 25)})`;
}

export const isBinary = (v: unknown): v is Uint8Array | ArrayBuffer | DataView => v instanceof ArrayBuffer || ArrayBuffer.isView(v);

export function invalidType(name: string, expected: string, value: unknown): TypeError {
  return nodeError(new TypeError(`The "${name}" argument must be ${expected}.${describeReceived(value)}`), "ERR_INVALID_ARG_TYPE");
}

/** Node's "string or binary" arguments (a password, a salt, an IV) as a copy of their bytes. */
export function binaryLike(value: unknown, name: string, encoding?: string): Uint8Array {
  if (typeof value !== "string" && !isBinary(value))
    throw invalidType(name, "of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView", value);
  return Uint8Array.from(toBytes(value, encoding));
}

export function checkCallback(callback: unknown): (err: Error | null, ...values: unknown[]) => void {
  if (typeof callback !== "function") throw invalidType("callback", "of type function", callback);
  return callback as (err: Error | null, ...values: unknown[]) => void;
}

/** An asynchronous form's result, after this turn as Node's are. Bad arguments throw at the call, as in Node. */
export function later(callback: (err: Error | null, ...values: unknown[]) => void, ...values: unknown[]): void {
  void Promise.resolve().then(() => callback(null, ...values));
}
