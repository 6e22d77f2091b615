import { randomFillSync } from "node:crypto";
import { v7 as timeOrderedUuid } from "uuid";
import type { EventMetadata, NewEvent } from "./eventStore.js";

/** A NewEvent checked and completed for writing: it has its id and a metadata object. */
export interface ProposedEvent {
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: EventMetadata;
  /** False when the store generated the id: such an event cannot be a retry, so no lookup. */
  readonly idGiven: boolean;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

/**
 * Random bytes for generated ids, from a pool refilled 256 ids at a time: left to itself the `uuid`
 * package asks the system for 16 bytes per id, a system call each (3–4 % of a busy node's event
 * loop on a VM, where system calls are dear).
 */
const randomPool = Buffer.allocUnsafe(16 * 256);
let randomUsed = randomPool.length;
/** The ids' clock and counter: ids of one millisecond count up from a random start (RFC 9562, method 1), as the package's own state does. */
const v7Clock = { msecs: -Infinity, seq: 0 };

/** A new time-ordered id (UUIDv7), later than every one this process generated before. */
export function generatedEventId(): string {
  if (randomUsed === randomPool.length) {
    randomFillSync(randomPool);
    randomUsed = 0;
  }
  const random = randomPool.subarray(randomUsed, (randomUsed += 16));
  const now = Date.now();
  if (now > v7Clock.msecs) {
    v7Clock.msecs = now;
    v7Clock.seq = ((random[6] & 0x7f) << 24) | (random[7] << 16) | (random[8] << 8) | random[9];
  } else {
    v7Clock.seq = (v7Clock.seq + 1) | 0;
    if (v7Clock.seq === 0) v7Clock.msecs++;
  }
  return timeOrderedUuid({ random, msecs: v7Clock.msecs, seq: v7Clock.seq });
}

/** Validates an append's events (every adapter the same way) and fills in missing ids. */
export function proposeEvents(events: readonly NewEvent[]): ProposedEvent[] {
  if (events.length === 0) throw new RangeError("an append needs at least one event");
  return events.map((event) => {
    if (typeof event.type !== "string" || event.type.length === 0) {
      throw new TypeError("event type must be a non-empty string");
    }
    if (event.id !== undefined && !isUuid(event.id)) {
      throw new TypeError(`event id must be a uuid, got ${JSON.stringify(event.id)}`);
    }
    const metadata = event.metadata ?? {};
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
      throw new TypeError("event metadata must be a JSON object");
    }
    return {
      // Lower-case so that the same uuid spelled in another case is the same event everywhere.
      // A generated id is time-ordered (UUIDv7): the stores' unique index on ids then grows at its
      // right edge, so a commit writes one page of it, not a random page per event.
      id: event.id === undefined ? generatedEventId() : event.id.toLowerCase(),
      type: event.type,
      data: event.data === undefined ? null : event.data,
      metadata,
      idGiven: event.id !== undefined,
    };
  });
}

/** JSON text of an event's data; throws a TypeError for values JSON cannot carry. */
export function jsonText(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("event data is not representable as JSON");
  return text;
}
