import type { RecordedEvent } from "../store/eventStore.js";
import { deepFreeze } from "../json/freeze.js";

/**
 * Entries of a memo with one key per busy source (sources by id and by endpoint, the subscriptions
 * of an emitter). A memo smaller than the sources that take turns keeps nothing: each lookup
 * evicts the entry the next one needs (oldest out), so every lookup runs its query. Sized for a
 * node with 100,000 busy sources, whose warm sandboxes alone would take tens of GB: next to
 * that, an entry (a frozen row of a few KB at most) is noise.
 */
export const PER_SOURCE_MEMO_ENTRIES = 100_000;

/** What a memo listens to: the node's projector (only its `onApplied`). */
export interface AppliedEvents {
  onApplied(listener: (events: readonly RecordedEvent[]) => void): () => void;
}

/**
 * Lookups of one read model memoized on the node that projects it: the hot paths (a source by its
 * endpoint on every request, a source by id on every run and routed event, a user's plan on every
 * admission) would otherwise each run a query and parse its row.
 *
 * Every entry is dropped as soon as the projector applies an event the read model's projection
 * handles, in the same synchronous step that commits it: a lookup never returns a row the read
 * model no longer has. Misses are not kept (unknown endpoints cannot fill the memo). Values are
 * deep-frozen, since every caller shares them.
 */
export class ReadModelMemo<V extends object> {
  readonly #entries = new Map<string, V>();
  readonly #memoizing: boolean;

  constructor(
    /** The node's projector; without it (CLI, tests) every lookup reads the file. */
    changes: AppliedEvents | undefined,
    /** The projection's `handles`: the events that may change the rows. */
    private readonly handles: ReadonlySet<string>,
    private readonly max = 10_000,
  ) {
    this.#memoizing = changes !== undefined;
    changes?.onApplied((events) => {
      if (this.#entries.size > 0 && events.some((event) => this.handles.has(event.type))) this.#entries.clear();
    });
  }

  /** Frozen when memoized. */
  get(key: string, load: () => V | undefined): V | undefined {
    if (!this.#memoizing) return load();
    const hit = this.#entries.get(key);
    if (hit !== undefined) return hit;
    const value = load();
    if (value === undefined) return undefined;
    // The oldest entry makes room: the memo stays bounded however many keys are asked for.
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, deepFreeze(value));
    return value;
  }
}
