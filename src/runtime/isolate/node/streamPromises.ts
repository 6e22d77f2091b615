// Node's `stream/promises`.
import Stream from "readable-stream/lib/stream.js";

export default (Stream as unknown as { promises: object }).promises;
