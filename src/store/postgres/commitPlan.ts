import type { AppendResult } from "../eventStore.js";
import { assertExpectedRevision } from "../expectedRevision.js";
import type { AppendOutcome, PendingAppend } from "../groupCommit.js";
import { findReplay, type StoredEventId } from "../idempotency.js";
import { jsonText } from "../proposedEvent.js";

/** What the store holds for a group's streams and ids, read under the append lock. */
export interface StoreState {
  readonly head: number;
  readonly revisions: Map<string, number>;
  readonly ids: Map<string, StoredEventId>;
}

/** Rows to write, as parallel columns for unnest(). */
export interface EventColumns {
  readonly position: number[];
  readonly stream: string[];
  readonly revision: number[];
  readonly id: string[];
  readonly type: string[];
  readonly data: string[];
  readonly metadata: string[];
  readonly created: number[];
}

export interface CommitPlan {
  readonly outcomes: AppendOutcome[];
  readonly events: EventColumns;
  /** Final revision of every stream the group appended to. */
  readonly streams: Map<string, number>;
  readonly head: number;
}

/**
 * Decides a whole group against the state read under the lock, append by append, as if each
 * were its own transaction: later appends of the group see the earlier accepted ones.
 */
export function planCommit(group: readonly PendingAppend[], state: StoreState, created: number): CommitPlan {
  const events: EventColumns = { position: [], stream: [], revision: [], id: [], type: [], data: [], metadata: [], created: [] };
  const streams = new Map<string, number>();
  const revisions = new Map(state.revisions);
  const ids = new Map(state.ids);
  let head = state.head;
  const outcomes = group.map((append): AppendOutcome => {
    try {
      return { result: planAppend(append) };
    } catch (error) {
      return { error };
    }
  });
  return { outcomes, events, streams, head };

  function planAppend({ stream, events: proposed, expectedRevision }: PendingAppend): AppendResult {
    const replay = findReplay(stream, proposed, (id) => ids.get(id));
    if (replay !== undefined) return replay;
    const actual = revisions.get(stream);
    assertExpectedRevision(stream, expectedRevision, actual);
    // Serialize before touching any column, so a bad payload leaves the plan unchanged.
    const rows = proposed.map((event) => ({ event, data: jsonText(event.data), metadata: jsonText(event.metadata) }));
    let revision = actual ?? -1;
    for (const { event, data, metadata } of rows) {
      revision += 1;
      head += 1;
      events.position.push(head);
      events.stream.push(stream);
      events.revision.push(revision);
      events.id.push(event.id);
      events.type.push(event.type);
      events.data.push(data);
      events.metadata.push(metadata);
      events.created.push(created);
      ids.set(event.id, { stream, revision, position: head });
    }
    revisions.set(stream, revision);
    streams.set(stream, revision);
    return { nextExpectedRevision: revision, position: head };
  }
}
