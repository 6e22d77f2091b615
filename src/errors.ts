// What every failure becomes for clients (API and CLI alike): a DomainError with a stable code.
// Library and framework errors that carry a safe meaning are translated here, once.
import { DomainError } from "../commands/decider.js";
import { ComponentValidationError } from "./runtime/errors.js";
import { OutboundError } from "./net/outbound.js";
import { ReplyTimeoutError } from "./bus/reply.js";
import { JsonLimitError } from "./json/bounded.js";
import { BusUnavailableError } from "./bus/bus.js";
import { StoreUnavailableError } from "./store/storeUnavailableError.js";
import { storageFailure } from "./sqliteFailure.js";

export function toDomainError(error: unknown): DomainError {
  if (error instanceof DomainError) return error;
  if (error instanceof ComponentValidationError) {
    const details = error.problems.map((p) => ({ path: `component.${p.path}`, message: p.message }));
    return new DomainError(
      "invalid_component",
      `the component has ${details.length} problem(s): ${details[0]?.path} ${details[0]?.message}`,
      details,
    );
  }
  if (error instanceof OutboundError)
    return new DomainError("component_url_unreachable", `component_url could not be fetched: ${error.message}`);
  if (error instanceof ReplyTimeoutError)
    return new DomainError("run_timeout", `the run did not answer within ${Math.round(error.timeoutMs / 1000)} s`);
  if (error instanceof JsonLimitError) {
    return error.reason === "too_deep" ? new DomainError("json_too_deep", error.message) : new DomainError("malformed_json", error.message);
  }
  // The bus's brokers down or restarting: what was being queued may not have been; the same
  // request can succeed once they are back (a request answered 2xx was queued).
  if (error instanceof BusUnavailableError) {
    return new DomainError("unavailable", "the message bus is unavailable; the request may not have been taken, try again", undefined, 5);
  }
  // The log's server down or restarting (the scaled configuration's PostgreSQL): a write may or
  // may not have been taken; reads are served from the node's read models meanwhile.
  if (error instanceof StoreUnavailableError) {
    return new DomainError("unavailable", "the event store is unavailable; the write may not have been taken, try again", undefined, 5);
  }
  switch (storageFailure(error)) {
    // A storage file held locked past SQLite's busy timeout (another process writing, a long
    // checkpoint): nothing was written, and the same request can succeed a moment later.
    case "busy":
      return new DomainError("unavailable", "storage is busy; nothing was written, try again", undefined, 1);
    // The disk is full: nothing was written either; it takes an operator, so ask for a longer wait.
    case "full":
      return new DomainError("unavailable", "storage is full; nothing was written", undefined, 30);
    // The disk failing or the files made unwritable under the node (an I/O error, a read-only or
    // vanished file): the statement was rolled back, and it takes an operator too.
    case "unwritable":
      return new DomainError("unavailable", "storage cannot be written just now (an I/O error); nothing was written", undefined, 30);
    // The engine's own trouble (a damaged file, out of memory) is the internal error below.
    case "engine":
    case undefined:
      break;
  }
  // koa/http-errors from the router (405, 501) and raw-body (413, 400) carry a safe status and message.
  const status = (error as { status?: unknown } | undefined)?.status;
  if (status === 501) return new DomainError("not_implemented", (error as Error).message);
  if (typeof status === "number" && status >= 400 && status < 500) {
    const code = status === 405 ? "method_not_allowed" : status === 413 ? "payload_too_large" : "invalid_request";
    return new DomainError(code, (error as Error).message);
  }
  return new DomainError("internal", "internal error");
}
