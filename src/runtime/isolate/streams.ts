// The WHATWG streams Node 20 has as globals (ReadableStream and its readers and controllers,
// WritableStream, TransformStream, the queuing strategies), from web-streams-polyfill (the spec's
// reference implementation), plus TextEncoderStream and TextDecoderStream over them. Made on the
// first read of one of these globals (prelude.ts), never in a context that does not use them.
// What this adds to every context is kept small: the polyfill's code is one function (its
// CommonJS build) and this module has one export.
import type * as Ponyfill from "web-streams-polyfill";
import { TextDecoder, utf8Encode } from "./textCodec.js";

// The polyfill's CommonJS build, required: the bundle keeps its code in one function run on first
// use. (Its ES module build would have esbuild hoist its few hundred functions to the prelude's top
// level, made again in every context.)
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
const polyfill = require("web-streams-polyfill") as typeof Ponyfill;
const {
  ByteLengthQueuingStrategy,
  CountQueuingStrategy,
  ReadableByteStreamController,
  ReadableStream,
  ReadableStreamBYOBReader,
  ReadableStreamBYOBRequest,
  ReadableStreamDefaultController,
  ReadableStreamDefaultReader,
  TransformStream,
  TransformStreamDefaultController,
  WritableStream,
  WritableStreamDefaultController,
  WritableStreamDefaultWriter,
} = polyfill;
type ReadableStream<T> = Ponyfill.ReadableStream<T>;
type WritableStream<T> = Ponyfill.WritableStream<T>;
type TransformStream<I, O> = Ponyfill.TransformStream<I, O>;

class TextEncoderStream {
  readonly encoding = "utf-8";
  readonly #transform: TransformStream<string, Uint8Array>;
  constructor() {
    let pendingHigh = "";
    this.#transform = new TransformStream<string, Uint8Array>({
      transform(chunk, controller) {
        let text = pendingHigh + String(chunk);
        pendingHigh = "";
        // A lone high surrogate at the end may pair with the next chunk's first unit.
        const last = text.charCodeAt(text.length - 1);
        if (last >= 0xd800 && last <= 0xdbff) {
          pendingHigh = text.slice(-1);
          text = text.slice(0, -1);
        }
        if (text.length > 0) controller.enqueue(utf8Encode(text));
      },
      flush(controller) {
        if (pendingHigh) controller.enqueue(utf8Encode("\ufffd"));
      },
    });
  }
  get readable(): ReadableStream<Uint8Array> {
    return this.#transform.readable;
  }
  get writable(): WritableStream<string> {
    return this.#transform.writable;
  }
}
Object.defineProperty(TextEncoderStream.prototype, Symbol.toStringTag, { value: "TextEncoderStream", configurable: true });

class TextDecoderStream {
  readonly encoding: string;
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  readonly #transform: TransformStream<ArrayBuffer | ArrayBufferView, string>;
  constructor(label = "utf-8", options: { fatal?: boolean; ignoreBOM?: boolean } = {}) {
    // The decoder in its streaming mode keeps a character split across chunks for the next one.
    const decoder = new TextDecoder(label, options);
    this.encoding = decoder.encoding;
    this.fatal = decoder.fatal;
    this.ignoreBOM = decoder.ignoreBOM;
    const bytesOf = (chunk: ArrayBuffer | ArrayBufferView) => {
      if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
      if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      throw new TypeError('The "input" argument must be an instance of ArrayBuffer or ArrayBufferView');
    };
    this.#transform = new TransformStream<ArrayBuffer | ArrayBufferView, string>({
      transform(chunk, controller) {
        const text = decoder.decode(bytesOf(chunk), { stream: true });
        if (text.length > 0) controller.enqueue(text);
      },
      flush(controller) {
        const text = decoder.decode();
        if (text.length > 0) controller.enqueue(text);
      },
    });
  }
  get readable(): ReadableStream<string> {
    return this.#transform.readable;
  }
  get writable(): WritableStream<ArrayBuffer | ArrayBufferView> {
    return this.#transform.writable;
  }
}
Object.defineProperty(TextDecoderStream.prototype, Symbol.toStringTag, { value: "TextDecoderStream", configurable: true });

/** All of them in one export: the prelude reads the globals from it (one export, not fifteen, to set up in each context). */
export const webStreams = {
  ByteLengthQueuingStrategy,
  CountQueuingStrategy,
  ReadableByteStreamController,
  ReadableStream,
  ReadableStreamBYOBReader,
  ReadableStreamBYOBRequest,
  ReadableStreamDefaultController,
  ReadableStreamDefaultReader,
  TransformStream,
  TransformStreamDefaultController,
  WritableStream,
  WritableStreamDefaultController,
  WritableStreamDefaultWriter,
  TextEncoderStream,
  TextDecoderStream,
};
