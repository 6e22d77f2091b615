// this.db: the source's key-value store. JSON values, 60 KB per source (keys plus JSON values).
import { assertJsonSerializable } from "./json.js";
import { utf8Length } from "./textCodec.js";
import { parse, stringify } from "./primordials.js";

export class DbLimitError extends Error {
  override name = "DbLimitError";
}

export class DbStore {
  readonly #values = new Map<string, string>();
  readonly #limit: number;
  #size = 0;
  changed = false;

  constructor(snapshot: Record<string, unknown>, limit: number) {
    this.#limit = limit;
    for (const [key, value] of Object.entries(snapshot ?? {})) {
      if (value === undefined) continue;
      const json = stringify(value);
      this.#values.set(key, json);
      this.#size += utf8Length(key) + utf8Length(json);
    }
  }

  get(key: unknown): unknown {
    const raw = this.#values.get(String(key));
    return raw === undefined ? undefined : parse(raw);
  }

  set(key: unknown, value: unknown): void {
    if (typeof key !== "string") throw new TypeError(`this.db.set: the key must be a string, got ${typeof key}`);
    const previous = this.#values.get(key);
    const previousSize = previous === undefined ? 0 : utf8Length(key) + utf8Length(previous);
    if (value === undefined) {
      if (previous !== undefined) {
        this.#values.delete(key);
        this.#size -= previousSize;
        this.changed = true;
      }
      return;
    }
    assertJsonSerializable(value, `this.db.set("${key}")`);
    const json = stringify(value);
    const nextSize = this.#size - previousSize + utf8Length(key) + utf8Length(json);
    if (nextSize > this.#limit) {
      throw new DbLimitError(
        `this.db.set("${key}"): the source's data would be ${nextSize} bytes, over the limit of ${this.#limit} bytes (${Math.round(this.#limit / 1024)} KB) per source`,
      );
    }
    this.#values.set(key, json);
    this.#size = nextSize;
    this.changed = true;
  }

  get size(): number {
    return this.#size;
  }

  /** The snapshot as JSON text, built from the stored JSON without re-serializing. */
  toJSONText(): string {
    const parts: string[] = [];
    for (const [k, v] of this.#values) parts.push(`${stringify(k)}:${v}`);
    return `{${parts.join(",")}}`;
  }

  /** The object components see as this.db. */
  facade(): { get(key: string): unknown; set(key: string, value: unknown): void } {
    return { get: (key) => this.get(key), set: (key, value) => this.set(key, value) };
  }
}
