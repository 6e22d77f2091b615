// Node's `stream/web`: the web streams the sandbox has as globals (made the first time one is read).
import { WEB_STREAM_NAMES } from "../webStreamNames.js";

const streamWeb: Record<string, unknown> = {};
for (const name of WEB_STREAM_NAMES) {
  Object.defineProperty(streamWeb, name, { get: () => (globalThis as Record<string, unknown>)[name], enumerable: true });
}

export default streamWeb;
