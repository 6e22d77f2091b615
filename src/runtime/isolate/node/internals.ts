// How the modules of this folder reach the prelude: they are bundled into a component (only when
// it imports them) and share its isolate, so the prelude's HTTP bridge and /tmp are theirs too.
import type { HttpBridgeError, RawRequest, RawResponse } from "../http.js";
import type { tmpStore } from "../tmpStore.js";

export interface Internals {
  hostRequest(req: RawRequest): Promise<RawResponse>;
  HttpBridgeError: typeof HttpBridgeError;
  tmp: typeof tmpStore;
  registerReadable(readable: { from(chunks: unknown[], options?: { objectMode?: boolean }): unknown }): void;
  registerReadStream(make: (path: string) => unknown): void;
}

export function internals(): Internals {
  return (globalThis as unknown as { __hw_modules: Record<string, Internals> }).__hw_modules["headwater:internals"];
}
