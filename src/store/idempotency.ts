import { IdempotencyConflictError, type AppendResult } from "./eventStore.js";
import type { ProposedEvent } from "./proposedEvent.js";

/** Where an event id already lives in the store. */
export interface StoredEventId {
  readonly stream: string;
  readonly revision: number;
  readonly position: number;
}

/**
 * The idempotency rule: an append whose ids ALL exist, consecutively and in order, in the same
 * stream is a retry and gets the original result back; an append none of whose ids exist is new;
 * anything in between is an IdempotencyConflictError. Returns the replayed result or undefined.
 */
export function findReplay(
  stream: string,
  events: readonly Pick<ProposedEvent, "id" | "idGiven">[],
  lookup: (id: string) => StoredEventId | undefined,
): AppendResult | undefined {
  const seen = new Set<string>();
  for (const event of events) {
    if (seen.has(event.id)) throw new IdempotencyConflictError(stream, event.id);
    seen.add(event.id);
  }
  if (!events.some((event) => event.idGiven)) return undefined;
  const stored = events.map((event) => (event.idGiven ? lookup(event.id) : undefined));
  const firstStored = stored.findIndex((entry) => entry !== undefined);
  if (firstStored === -1) return undefined;
  const first = stored[0];
  for (let index = 0; index < events.length; index++) {
    const entry = stored[index];
    const consecutive = entry !== undefined && first !== undefined && entry.stream === stream && entry.revision === first.revision + index;
    if (!consecutive) throw new IdempotencyConflictError(stream, events[entry === undefined ? firstStored : index].id);
  }
  const last = stored[stored.length - 1]!;
  return { nextExpectedRevision: last.revision, position: last.position };
}
