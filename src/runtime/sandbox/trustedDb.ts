// The authoritative this.db of one invocation, kept in the runner child where the isolate cannot
// reach it. Every db.set in the isolate arrives here as (key, JSON text) through a synchronous
// bridge call and is checked before it is accepted; the snapshot after the run is made from here.
import { jsonDepth, MAX_JSON_DEPTH, parseJson } from "../../json/bounded.js";
import { MAX_DB_KEY_BYTES } from "../rules.js";

export interface DbRefusal {
  name: "DbLimitError" | "TypeError";
  message: string;
}

function shownKey(key: string): string {
  return JSON.stringify(key.length > 100 ? `${key.slice(0, 100)}…` : key);
}

export class TrustedDb {
  #values: Map<string, string> | undefined;
  #size = 0;
  changed = false;

  constructor(
    private readonly snapshotJson: string,
    private readonly limit: number,
  ) {}

  /** The snapshot is parsed on the first set only: most runs never write. */
  private values(): Map<string, string> {
    if (this.#values) return this.#values;
    const values = new Map<string, string>();
    const snapshot = parseJson(this.snapshotJson);
    if (typeof snapshot !== "object" || snapshot === null || Array.isArray(snapshot))
      throw new TypeError("the db snapshot must be a JSON object");
    for (const [key, value] of Object.entries(snapshot)) {
      const json = JSON.stringify(value);
      values.set(key, json);
      this.#size += Buffer.byteLength(key) + Buffer.byteLength(json);
    }
    this.#values = values;
    return values;
  }

  /** Stores `json` (undefined deletes) or answers why not. */
  set(key: unknown, json: unknown): DbRefusal | null {
    if (typeof key !== "string") return { name: "TypeError", message: `this.db.set: the key must be a string, got ${typeof key}` };
    const keyBytes = Buffer.byteLength(key);
    if (keyBytes > MAX_DB_KEY_BYTES) {
      return {
        name: "DbLimitError",
        message: `this.db.set(${shownKey(key)}): the key is ${keyBytes} bytes, over the limit of ${MAX_DB_KEY_BYTES} bytes`,
      };
    }
    const what = `this.db.set(${shownKey(key)})`;
    const values = this.values();
    const previous = values.get(key);
    const previousSize = previous === undefined ? 0 : keyBytes + Buffer.byteLength(previous);
    if (json === undefined) {
      if (previous !== undefined) {
        values.delete(key);
        this.#size -= previousSize;
        this.changed = true;
      }
      return null;
    }
    if (typeof json !== "string") return { name: "TypeError", message: `${what}: the value must arrive as JSON text` };
    const nextSize = this.#size - previousSize + keyBytes + Buffer.byteLength(json);
    if (nextSize > this.limit) {
      return {
        name: "DbLimitError",
        message: `${what}: the source's data would be ${nextSize} bytes, over the limit of ${this.limit} bytes (${Math.round(this.limit / 1024)} KB) per source`,
      };
    }
    if (jsonDepth(json, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
      return { name: "DbLimitError", message: `${what}: the value is nested deeper than ${MAX_JSON_DEPTH} levels` };
    try {
      JSON.parse(json);
    } catch {
      return { name: "TypeError", message: `${what}: the value is not valid JSON text` };
    }
    values.set(key, json);
    this.#size = nextSize;
    this.changed = true;
    return null;
  }

  /** The snapshot as JSON text, from the stored texts without re-serializing. */
  snapshot(): string {
    const parts: string[] = [];
    for (const [k, v] of this.values()) parts.push(`${JSON.stringify(k)}:${v}`);
    return `{${parts.join(",")}}`;
  }
}
