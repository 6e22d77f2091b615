// this.db: the source's key-value store. The authoritative copy lives in the runner child, which
// checks every set (key, depth, 60 KB per source) through a synchronous bridge call; this copy
// only serves reads, which affect nobody but the component itself.
import { host } from "./bridge.js";
import { assertJsonSerializable, JsonDepthError } from "./json.js";
import { LimitError } from "./limitError.js";
import { MapCtor, MapPrototypeDelete, MapPrototypeGet, MapPrototypeSet, objectKeys, parse, StringCtor, stringify } from "./primordials.js";

export class DbLimitError extends LimitError {
  override name = "DbLimitError";
}

export class DbStore {
  // Primordials only: in a warm isolate this runs after the component replaced what it liked.
  readonly #values: Map<string, string> = new MapCtor();

  constructor(snapshotJson: string) {
    const snapshot = parse(snapshotJson) as Record<string, unknown>;
    const names = objectKeys(snapshot);
    for (let i = 0; i < names.length; i++) MapPrototypeSet(this.#values, names[i], stringify(snapshot[names[i]]));
  }

  get(key: unknown): unknown {
    const raw = MapPrototypeGet(this.#values, StringCtor(key));
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
        if (err instanceof JsonDepthError || err instanceof RangeError)
          throw new DbLimitError(err instanceof JsonDepthError ? err.message : `${what}: the value is nested too deeply to store`);
        throw new TypeError(`${what}: the value is not JSON-serializable: ${(err as Error)?.message}`);
      }
      if (json === undefined) throw new TypeError(`${what}: the value has no JSON form (its toJSON returned undefined)`);
    }
    const refused = host().db(key, json);
    if (refused) throw refused.name === "TypeError" ? new TypeError(refused.message) : new DbLimitError(refused.message);
    if (json === undefined) MapPrototypeDelete(this.#values, key);
    else MapPrototypeSet(this.#values, key, json);
  }

  /** The object components see as this.db. */
  facade(): { get(key: string): unknown; set(key: string, value: unknown): void } {
    return { get: (key) => this.get(key), set: (key, value) => this.set(key, value) };
  }
}
