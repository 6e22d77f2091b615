// this.db: the source's key-value store. The authoritative copy lives in the runner child, which
// checks every set (key, depth, 60 KB per source) through a synchronous bridge call; this copy
// only serves reads, which affect nobody but the component itself.
import { host } from "./bridge.js";
import { assertJsonSerializable, JsonDepthError } from "./json.js";
import { LimitError } from "./limitError.js";
import { parse, stringify } from "./primordials.js";

export class DbLimitError extends LimitError {
  override name = "DbLimitError";
}

export class DbStore {
  readonly #values = new Map<string, string>();

  constructor(snapshotJson: string) {
    const snapshot = parse(snapshotJson) as Record<string, unknown>;
    for (const [key, value] of Object.entries(snapshot ?? {})) {
      if (value !== undefined) this.#values.set(key, stringify(value));
    }
  }

  get(key: unknown): unknown {
    const raw = this.#values.get(String(key));
    return raw === undefined ? undefined : parse(raw);
  }

  set(key: unknown, value: unknown): void {
    if (typeof key !== "string") throw new TypeError(`this.db.set: the key must be a string, got ${typeof key}`);
    let json: string | undefined;
    if (value !== undefined) {
      const what = `this.db.set("${key}")`;
      try {
        assertJsonSerializable(value, what);
        json = stringify(value);
      } catch (err) {
        if (err instanceof TypeError) throw err;
        // Too deep for the check or for JSON.stringify itself (a stack overflow).
        if (err instanceof JsonDepthError || err instanceof RangeError) throw new DbLimitError(err instanceof JsonDepthError ? err.message : `${what}: the value is nested too deeply to store`);
        throw new TypeError(`${what}: the value is not JSON-serializable: ${(err as Error)?.message}`);
      }
      if (json === undefined) throw new TypeError(`${what}: the value has no JSON form (its toJSON returned undefined)`);
    }
    const refused = host().db(key, json);
    if (refused) throw refused.name === "TypeError" ? new TypeError(refused.message) : new DbLimitError(refused.message);
    if (json === undefined) this.#values.delete(key);
    else this.#values.set(key, json);
  }

  /** The object components see as this.db. */
  facade(): { get(key: string): unknown; set(key: string, value: unknown): void } {
    return { get: (key) => this.get(key), set: (key, value) => this.set(key, value) };
  }
}
