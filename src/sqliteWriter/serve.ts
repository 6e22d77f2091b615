// The writer thread's side (see thread.ts): answers each request in order with what `handle`
// returned or threw, and closes the connection when asked.
import { parentPort } from "node:worker_threads";
import type { EncodedError } from "./thread.js";

/** Encodes a plain error: name, message and a string `code` (SQLite's, such as SQLITE_FULL). */
export function encodePlainError(error: unknown): EncodedError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { name: error.name, message: error.message, fields: typeof code === "string" ? { code } : undefined };
}

export function serveWrites<Request>(
  handle: (request: Request) => unknown,
  close: () => void,
  encodeError: (error: unknown) => EncodedError = encodePlainError,
): void {
  const port = parentPort;
  if (port === null) throw new Error("serveWrites runs on a worker thread");
  port.on("message", (message: { id: number; request?: Request; close?: true }) => {
    try {
      if (message.close) {
        close();
        port.postMessage({ id: message.id });
        port.close();
        return;
      }
      port.postMessage({ id: message.id, value: handle(message.request as Request) });
    } catch (error) {
      port.postMessage({ id: message.id, failed: encodeError(error) });
    }
  });
}
