// Node's `stream/web`: the web streams the sandbox has as globals (made the first time one is read).
const NAMES = [
  "ReadableStream",
  "ReadableStreamDefaultReader",
  "ReadableStreamBYOBReader",
  "ReadableStreamBYOBRequest",
  "ReadableByteStreamController",
  "ReadableStreamDefaultController",
  "WritableStream",
  "WritableStreamDefaultWriter",
  "WritableStreamDefaultController",
  "TransformStream",
  "TransformStreamDefaultController",
  "ByteLengthQueuingStrategy",
  "CountQueuingStrategy",
  "TextEncoderStream",
  "TextDecoderStream",
] as const;

const streamWeb: Record<string, unknown> = {};
for (const name of NAMES) {
  Object.defineProperty(streamWeb, name, { get: () => (globalThis as Record<string, unknown>)[name], enumerable: true });
}

export default streamWeb;
