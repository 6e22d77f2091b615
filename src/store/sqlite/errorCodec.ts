// Errors cross from the writer thread as plain data; the typed ones the command layer tells apart
// (wrong expected revision, idempotency conflict) come back as the same classes.
import { decodePlainError, type EncodedError } from "../../sqliteWriter/thread.js";
import { encodePlainError } from "../../sqliteWriter/serve.js";
import { IdempotencyConflictError, WrongExpectedRevisionError, type ExpectedRevision } from "../eventStore.js";

export function encodeError(error: unknown): EncodedError {
  if (error instanceof WrongExpectedRevisionError) {
    return { name: error.name, message: error.message, fields: { stream: error.stream, expected: error.expected, actual: error.actual } };
  }
  if (error instanceof IdempotencyConflictError) {
    return { name: error.name, message: error.message, fields: { stream: error.stream, eventId: error.eventId } };
  }
  return encodePlainError(error);
}

export function decodeError(encoded: EncodedError): Error {
  const fields = encoded.fields ?? {};
  switch (encoded.name) {
    case "WrongExpectedRevisionError":
      return new WrongExpectedRevisionError(
        fields.stream as string,
        fields.expected as ExpectedRevision,
        fields.actual as number | undefined,
      );
    case "IdempotencyConflictError":
      return new IdempotencyConflictError(fields.stream as string, fields.eventId as string);
    default:
      return decodePlainError(encoded);
  }
}
