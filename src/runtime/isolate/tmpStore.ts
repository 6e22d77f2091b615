// The storage behind the sandbox's `fs`: the run's /tmp, in memory, bounded, emptied when the run
// ends (invoke.ts). The fs module (node/fs.ts, bundled only into components that import it) keeps
// Node's API and errors; this keeps the bytes and the count. The isolate's memory limit stays the
// hard bound: this one gives a clear ENOSPC long before it.
import { isTmpPath } from "./tmpPath.js";
import { MapCtor, MapPrototypeClear, MapPrototypeDelete, MapPrototypeForEach, MapPrototypeGet, MapPrototypeSet } from "./primordials.js";

/** Bytes of file data one run may keep in /tmp. */
export const TMP_MAX_BYTES = 64 * 1024 * 1024;
export const TMP_ROOT = "/tmp";

export interface TmpEntry {
  readonly kind: "file" | "dir";
  data: Uint8Array;
  mtimeMs: number;
  readonly birthtimeMs: number;
}

const entries: Map<string, TmpEntry> = new MapCtor();
let used = 0;

function storeError(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

/** What the fs module may do with /tmp. Paths are absolute and normalized by the caller. */
export const tmpStore = {
  maxBytes: TMP_MAX_BYTES,
  used: (): number => used,
  get(path: string): TmpEntry | undefined {
    if (path === TMP_ROOT) return MapPrototypeGet(entries, path) ?? { kind: "dir", data: new Uint8Array(0), mtimeMs: 0, birthtimeMs: 0 };
    return MapPrototypeGet(entries, path);
  },
  /** Creates or replaces a file's contents (a copy is kept); refuses past the bound with ENOSPC. */
  write(path: string, data: Uint8Array): void {
    if (!isTmpPath(path) || path === TMP_ROOT) throw storeError("EACCES", `permission denied, open '${path}'`);
    const existing = MapPrototypeGet(entries, path);
    if (existing?.kind === "dir") throw storeError("EISDIR", `illegal operation on a directory, open '${path}'`);
    const before = existing ? existing.data.byteLength : 0;
    if (used - before + data.byteLength > TMP_MAX_BYTES) {
      throw storeError("ENOSPC", `no space left on device, write '${path}' (a run may keep ${TMP_MAX_BYTES} bytes in /tmp)`);
    }
    const copy = new Uint8Array(data.byteLength);
    copy.set(data);
    used += copy.byteLength - before;
    const now = Date.now();
    if (existing) {
      existing.data = copy;
      existing.mtimeMs = now;
    } else MapPrototypeSet(entries, path, { kind: "file", data: copy, mtimeMs: now, birthtimeMs: now });
  },
  mkdir(path: string): void {
    if (!isTmpPath(path)) throw storeError("EACCES", `permission denied, mkdir '${path}'`);
    if (path === TMP_ROOT || MapPrototypeGet(entries, path)) return;
    const now = Date.now();
    MapPrototypeSet(entries, path, { kind: "dir", data: new Uint8Array(0), mtimeMs: now, birthtimeMs: now });
  },
  remove(path: string): void {
    const existing = MapPrototypeGet(entries, path);
    if (!existing) return;
    used -= existing.data.byteLength;
    MapPrototypeDelete(entries, path);
  },
  /** Moves one entry (the caller moves a directory's children one by one). */
  move(from: string, to: string): void {
    const existing = MapPrototypeGet(entries, from);
    if (!existing || !isTmpPath(to) || to === TMP_ROOT) throw storeError("EACCES", `permission denied, rename '${from}' -> '${to}'`);
    const replaced = MapPrototypeGet(entries, to);
    if (replaced) used -= replaced.data.byteLength;
    MapPrototypeDelete(entries, from);
    MapPrototypeSet(entries, to, existing);
  },
  /** Every path under `dir` (deep), sorted. */
  under(dir: string): string[] {
    const prefix = dir === "/" ? "/" : dir + "/";
    const found: string[] = [];
    MapPrototypeForEach(entries, (_entry, path) => {
      if (path.startsWith(prefix)) found.push(path);
    });
    return found.sort();
  },
};

/** Empties /tmp when a run ends (primordials only: this runs after the component's code). */
export function clearTmp(): void {
  MapPrototypeClear(entries);
  used = 0;
}
