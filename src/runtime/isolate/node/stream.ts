// Node's `stream`: readable-stream (Node's streams, published for other runtimes), in Node's shape.
import Stream from "readable-stream/lib/stream.js";
import { internals } from "./internals.js";

// Response bodies (axios responseType "stream") become real Readable streams from now on.
internals().registerReadable(Stream.Readable);

export default Stream;
