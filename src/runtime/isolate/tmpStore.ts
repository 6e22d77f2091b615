// The storage behind the sandbox's `fs`: the run's /tmp, in memory, bounded, emptied when the run
// ends (invoke.ts). A workflow step's run starts with the files the step before it left
// (restoreTmp) and hands its own on (forEachTmpEntry) through the runner child. The fs module (node/fs.ts, bundled only into components that import it) keeps
// Node's API and errors; this keeps the bytes and the count. The isolate's memory limit stays the
// hard bound: this one gives a clear ENOSPC long before it.
import { isTmpPath } from "./tmpPath.js";
import {
  MapCtor,
  MapPrototypeClear,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MapPrototypeSet,
  StringPrototypeLastIndexOf,
  StringPrototypeSlice,
  TypedArrayByteLength,
} from "./primordials.js";
import { TMP_MAX_BYTES } from "../rules.js";

export const TMP_ROOT = "/tmp";
const Uint8ArrayCtor = Uint8Array;

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
      throw storeError(
        "ENOSPC",
        `no space left on device, write '${path}' (a run, or a workflow's steps together, may keep ${TMP_MAX_BYTES} bytes in /tmp)`,
      );
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

/** One entry of /tmp as it crosses to or from the runner child (a workflow step's files). */
export interface CarriedTmpEntry {
  readonly path: string;
  readonly kind: "file" | "dir";
  /** A file's bytes (an exact copy, not a view); empty for a directory. */
  readonly data: Uint8Array;
  readonly mtimeMs: number;
  readonly birthtimeMs: number;
}

/**
 * Puts back what the previous step of a workflow left in /tmp, before the run's code starts
 * (primordials only: a warm isolate has run component code before). The runner child checked the
 * entries (paths, kinds, the bound); a directory missing among them is made.
 */
export function restoreTmp(carried: readonly CarriedTmpEntry[]): void {
  clearTmp();
  for (let i = 0; i < carried.length; i++) {
    const e = carried[i];
    makeParents(e.path, e.mtimeMs);
    const existing = MapPrototypeGet(entries, e.path);
    if (existing) used -= TypedArrayByteLength(existing.data);
    MapPrototypeSet(entries, e.path, { kind: e.kind, data: e.data, mtimeMs: e.mtimeMs, birthtimeMs: e.birthtimeMs });
    used += TypedArrayByteLength(e.data);
  }
}

function makeParents(path: string, ms: number): void {
  let at = StringPrototypeSlice(path, 0, StringPrototypeLastIndexOf(path, "/"));
  while (at.length > TMP_ROOT.length) {
    if (MapPrototypeGet(entries, at) === undefined)
      MapPrototypeSet(entries, at, { kind: "dir", data: new Uint8ArrayCtor(0), mtimeMs: ms, birthtimeMs: ms });
    at = StringPrototypeSlice(at, 0, StringPrototypeLastIndexOf(at, "/"));
  }
}

/** Every entry of /tmp, before clearTmp: what a workflow step hands on to the next one. */
export function forEachTmpEntry(take: (path: string, entry: TmpEntry) => void): void {
  MapPrototypeForEach(entries, (entry, path) => take(path, entry));
}

/** Empties /tmp when a run ends (primordials only: this runs after the component's code). */
export function clearTmp(): void {
  MapPrototypeClear(entries);
  used = 0;
}
