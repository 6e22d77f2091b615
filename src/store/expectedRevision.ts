import { WrongExpectedRevisionError, type ExpectedRevision } from "./eventStore.js";

/** Throws WrongExpectedRevisionError unless `actual` (undefined: no stream) satisfies `expected`. */
export function assertExpectedRevision(stream: string, expected: ExpectedRevision, actual: number | undefined): void {
  if (!satisfies(expected, actual)) throw new WrongExpectedRevisionError(stream, expected, actual);
}

function satisfies(expected: ExpectedRevision, actual: number | undefined): boolean {
  switch (expected) {
    case "any":
      return true;
    case "no_stream":
      return actual === undefined;
    case "exists":
      return actual !== undefined;
    default:
      return actual === expected;
  }
}

export function validateExpectedRevision(expected: ExpectedRevision): void {
  if (typeof expected === "number" ? !Number.isSafeInteger(expected) || expected < 0 : !["any", "no_stream", "exists"].includes(expected)) {
    throw new TypeError(`invalid expected revision ${String(expected)}`);
  }
}
