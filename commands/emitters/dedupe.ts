// The seed's dedupe strategies, applied on the host to what one run emitted.

export type DedupeStrategy = "unique" | "greatest" | "last";

export interface EmitMeta {
  readonly id?: string | number;
  readonly name?: string;
  readonly summary?: string;
  readonly ts?: number;
}

export interface Emit {
  readonly event: unknown;
  readonly meta: EmitMeta;
}

export interface DedupeState {
  /** unique: the last 100 ids, oldest first. */
  readonly unique?: readonly string[];
  /**
   * greatest: the largest id emitted; an integer past Number's safe range (a 64-bit snowflake id)
   * is kept as its decimal text, exactly.
   */
  readonly greatest?: number | string;
  /** last: the id of the last emitted event. */
  readonly last?: string;
}

export interface DedupeResult {
  readonly kept: Emit[];
  readonly state: DedupeState;
  /** Reported in the run's logs: emits the strategy could not judge. */
  readonly warnings: string[];
}

export const UNIQUE_CACHE_SIZE = 100;

/**
 * Orders a run's emits by `ts` when given (stable: ties keep call order); an emit without `ts`
 * counts as emitted at `runStartedMs`.
 */
export function orderByTs(emits: readonly Emit[], runStartedMs: number): Emit[] {
  if (!emits.some((e) => typeof e.meta.ts === "number")) return [...emits];
  return emits
    .map((emit, index) => ({ emit, index, ts: typeof emit.meta.ts === "number" ? emit.meta.ts : runStartedMs }))
    .sort((a, b) => a.ts - b.ts || a.index - b.index)
    .map((entry) => entry.emit);
}

/** A numeric id: as a BigInt when it is an integer (compared exactly, however long), else a number. */
type Numeric = bigint | number;

const INTEGER_TEXT = /^\s*[-+]?\d+\s*$/;

function numericId(id: string | number): Numeric | undefined {
  if (typeof id === "number") return Number.isFinite(id) ? (Number.isSafeInteger(id) ? BigInt(id) : id) : undefined;
  if (INTEGER_TEXT.test(id)) return BigInt(id.trim());
  const value = id.trim() === "" ? NaN : Number(id);
  return Number.isFinite(value) ? value : undefined;
}

/** a > b, exactly for two integers (BigInt and number compare by value). */
const greater = (a: Numeric, b: Numeric): boolean => a > b;

/** What the state keeps: a number while it is one exactly, the decimal text of a longer integer. */
function stored(value: Numeric): number | string {
  if (typeof value === "number") return value;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value.toString();
}

export function applyDedupe(strategy: DedupeStrategy | undefined, state: DedupeState, ordered: readonly Emit[]): DedupeResult {
  if (!strategy) return { kept: [...ordered], state, warnings: [] };
  const warnings: string[] = [];
  const withoutId = ordered.filter((e) => e.meta.id === undefined || e.meta.id === null);
  if (withoutId.length > 0) {
    warnings.push(`${withoutId.length} event(s) emitted without an id under dedupe "${strategy}": they were emitted without deduplication`);
  }
  switch (strategy) {
    case "unique": {
      const seen = new Set(state.unique ?? []);
      const cache = [...(state.unique ?? [])];
      const kept: Emit[] = [];
      for (const emit of ordered) {
        if (emit.meta.id === undefined || emit.meta.id === null) {
          kept.push(emit);
          continue;
        }
        const id = String(emit.meta.id);
        if (seen.has(id)) continue;
        seen.add(id);
        cache.push(id);
        kept.push(emit);
      }
      return { kept, state: { ...state, unique: cache.slice(-UNIQUE_CACHE_SIZE) }, warnings };
    }
    case "greatest": {
      let greatest = state.greatest === undefined ? undefined : numericId(state.greatest);
      const kept: Emit[] = [];
      for (const emit of ordered) {
        if (emit.meta.id === undefined || emit.meta.id === null) {
          kept.push(emit);
          continue;
        }
        const value = numericId(emit.meta.id);
        if (value === undefined) {
          warnings.push(`dedupe "greatest" needs numeric ids: an event with id ${JSON.stringify(emit.meta.id)} was not emitted`);
          continue;
        }
        if (greatest !== undefined && !greater(value, greatest)) continue;
        greatest = value;
        kept.push(emit);
      }
      return { kept, state: greatest === undefined ? state : { ...state, greatest: stored(greatest) }, warnings };
    }
    case "last": {
      const ids = ordered.map((e) => (e.meta.id === undefined || e.meta.id === null ? undefined : String(e.meta.id)));
      const match = state.last === undefined ? -1 : ids.lastIndexOf(state.last);
      const kept = ordered.slice(match + 1);
      const newest = [...kept].reverse().find((e) => e.meta.id !== undefined && e.meta.id !== null);
      return { kept, state: newest ? { ...state, last: String(newest.meta.id) } : state, warnings };
    }
  }
}
