// Node's `fs`, limited to the run's /tmp: an in-memory filesystem (the prelude's tmpStore), at most
// 64 MB of file data, emptied when the run ends. Any other path answers EACCES, as a directory the
// component may not read would. Sync, callback and promise forms share one implementation.
import { Buffer } from "buffer";
import Stream from "stream";
import { internals } from "./internals.js";
import { isTmpPath, normalizePath } from "../tmpPath.js";

type PathLike = string | Buffer | URL;
type Encoding = BufferEncoding | null | undefined;
type Callback<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;

const ERRNO: Record<string, [number, string]> = {
  ENOENT: [-2, "no such file or directory"],
  EACCES: [-13, "permission denied"],
  EEXIST: [-17, "file already exists"],
  ENOTDIR: [-20, "not a directory"],
  EISDIR: [-21, "illegal operation on a directory"],
  EINVAL: [-22, "invalid argument"],
  ENOSPC: [-28, "no space left on device"],
  ENOTEMPTY: [-39, "directory not empty"],
  EBADF: [-9, "bad file descriptor"],
};

function fsError(code: string, syscall: string, path?: string, dest?: string): NodeJS.ErrnoException {
  const [errno, text] = ERRNO[code] ?? [-1, code];
  const where = path === undefined ? "" : ` '${path}'` + (dest === undefined ? "" : ` -> '${dest}'`);
  return Object.assign(new Error(`${code}: ${text}, ${syscall}${where}`), {
    errno,
    code,
    syscall,
    ...(path !== undefined ? { path } : {}),
  });
}

const store = () => internals().tmp;

/** The absolute, normalized path; anything outside /tmp is refused. */
function resolvePath(p: PathLike, syscall: string): string {
  let text: string;
  if (typeof p === "string") text = p;
  else if (Buffer.isBuffer(p)) text = p.toString("utf8");
  else if (p && typeof p === "object" && "href" in p) {
    if (p.protocol !== "file:") throw Object.assign(new TypeError("The URL must be of scheme file"), { code: "ERR_INVALID_URL_SCHEME" });
    text = decodeURIComponent(p.pathname);
  } else throw Object.assign(new TypeError(`The "path" argument must be of type string, Buffer or URL`), { code: "ERR_INVALID_ARG_TYPE" });
  if (text.includes("\0")) throw Object.assign(new TypeError("The path must not contain null bytes"), { code: "ERR_INVALID_ARG_VALUE" });
  const normalized = normalizePath(text);
  if (!isTmpPath(normalized)) throw fsError("EACCES", syscall, text);
  return normalized;
}

const parentOf = (path: string) => path.slice(0, path.lastIndexOf("/")) || "/";

function requireParentDir(path: string, syscall: string): void {
  const parent = store().get(parentOf(path));
  if (!parent) throw fsError("ENOENT", syscall, path);
  if (parent.kind !== "dir") throw fsError("ENOTDIR", syscall, path);
}

function toBytes(data: unknown, encoding: Encoding): Buffer {
  if (typeof data === "string") return Buffer.from(data, encoding ?? "utf8");
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  throw Object.assign(new TypeError(`The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView`), {
    code: "ERR_INVALID_ARG_TYPE",
  });
}

function encodingOf(options: unknown): Encoding {
  if (typeof options === "string") return options as BufferEncoding;
  if (options && typeof options === "object" && "encoding" in options) return (options as { encoding?: Encoding }).encoding ?? null;
  return null;
}

function output(data: Uint8Array, encoding: Encoding): string | Buffer {
  const copy = Buffer.from(data);
  return encoding && (encoding as string) !== "buffer" ? copy.toString(encoding) : copy;
}

export class Stats {
  readonly dev = 1;
  readonly ino: number;
  readonly mode: number;
  readonly nlink = 1;
  readonly uid = 1000;
  readonly gid = 1000;
  readonly rdev = 0;
  readonly size: number;
  readonly blksize = 4096;
  readonly blocks: number;
  readonly atimeMs: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly birthtimeMs: number;
  readonly atime: Date;
  readonly mtime: Date;
  readonly ctime: Date;
  readonly birthtime: Date;
  readonly #dir: boolean;
  constructor(entry: { kind: "file" | "dir"; data: Uint8Array; mtimeMs: number; birthtimeMs: number }, ino: number) {
    this.#dir = entry.kind === "dir";
    this.ino = ino;
    this.mode = this.#dir ? 0o40755 : 0o100644;
    this.size = this.#dir ? 4096 : entry.data.byteLength;
    this.blocks = Math.ceil(this.size / 512);
    this.atimeMs = this.mtimeMs = this.ctimeMs = entry.mtimeMs;
    this.birthtimeMs = entry.birthtimeMs;
    this.atime = this.mtime = this.ctime = new Date(entry.mtimeMs);
    this.birthtime = new Date(entry.birthtimeMs);
  }
  isFile(): boolean {
    return !this.#dir;
  }
  isDirectory(): boolean {
    return this.#dir;
  }
  isSymbolicLink(): boolean {
    return false;
  }
  isBlockDevice(): boolean {
    return false;
  }
  isCharacterDevice(): boolean {
    return false;
  }
  isFIFO(): boolean {
    return false;
  }
  isSocket(): boolean {
    return false;
  }
}

export class Dirent {
  constructor(
    readonly name: string,
    readonly parentPath: string,
    private readonly dir: boolean,
  ) {}
  get path(): string {
    return this.parentPath;
  }
  isFile(): boolean {
    return !this.dir;
  }
  isDirectory(): boolean {
    return this.dir;
  }
  isSymbolicLink(): boolean {
    return false;
  }
}

function inode(path: string): number {
  let h = 7;
  for (let i = 0; i < path.length; i++) h = (h * 31 + path.charCodeAt(i)) | 0;
  return Math.abs(h);
}

// ---- the operations (sync) ----

function existsSync(p: PathLike): boolean {
  try {
    return store().get(resolvePath(p, "access")) !== undefined;
  } catch {
    return false;
  }
}

function statSync(p: PathLike, options?: { throwIfNoEntry?: boolean }): Stats | undefined {
  const path = resolvePath(p, "stat");
  const entry = store().get(path);
  if (!entry) {
    if (options?.throwIfNoEntry === false) return undefined;
    throw fsError("ENOENT", "stat", path);
  }
  return new Stats(entry, inode(path));
}

function accessSync(p: PathLike): void {
  const path = resolvePath(p, "access");
  if (!store().get(path)) throw fsError("ENOENT", "access", path);
}

function readFileSync(p: PathLike | number, options?: unknown): string | Buffer {
  if (typeof p === "number") return output(descriptor(p, "read").data(), encodingOf(options));
  const path = resolvePath(p, "open");
  const entry = store().get(path);
  if (!entry) throw fsError("ENOENT", "open", path);
  if (entry.kind === "dir") throw fsError("EISDIR", "read");
  return output(entry.data, encodingOf(options));
}

function writeFileSync(p: PathLike | number, data: unknown, options?: unknown): void {
  const flag = options && typeof options === "object" ? (options as { flag?: string }).flag : undefined;
  if (typeof p === "number") {
    descriptor(p, "write").write(toBytes(data, encodingOf(options)), null);
    return;
  }
  const path = resolvePath(p, "open");
  requireParentDir(path, "open");
  const bytes = toBytes(data, encodingOf(options));
  const existing = store().get(path);
  if (flag?.includes("x") && existing) throw fsError("EEXIST", "open", path);
  if (flag?.startsWith("a") && existing && existing.kind === "file") store().write(path, Buffer.concat([existing.data, bytes]));
  else store().write(path, bytes);
}

function appendFileSync(p: PathLike | number, data: unknown, options?: unknown): void {
  writeFileSync(p, data, { encoding: encodingOf(options) ?? "utf8", flag: "a" });
}

function mkdirSync(p: PathLike, options?: { recursive?: boolean; mode?: number } | number): string | undefined {
  const path = resolvePath(p, "mkdir");
  const recursive = typeof options === "object" && options?.recursive === true;
  const existing = store().get(path);
  if (existing) {
    if (recursive && existing.kind === "dir") return undefined;
    throw fsError("EEXIST", "mkdir", path);
  }
  if (!recursive) {
    requireParentDir(path, "mkdir");
    store().mkdir(path);
    return undefined;
  }
  let first: string | undefined;
  let at = "";
  for (const part of path.split("/").slice(1)) {
    at += "/" + part;
    const entry = at === "/" ? undefined : store().get(at);
    if (at === "/tmp" || (entry && entry.kind === "dir")) continue;
    if (entry) throw fsError("ENOTDIR", "mkdir", path);
    store().mkdir(at);
    first ??= at;
  }
  return first;
}

let tempCounter = 0;
function mkdtempSync(prefix: string): string {
  const chars = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (;;) {
    let suffix = "";
    for (let i = 0; i < 6; i++) suffix += chars[Math.floor(Math.random() * chars.length)];
    const path = resolvePath(`${prefix}${suffix}`, "mkdtemp");
    if (store().get(path)) {
      if (++tempCounter > 1000) throw fsError("EEXIST", "mkdtemp", prefix);
      continue;
    }
    requireParentDir(path, "mkdtemp");
    store().mkdir(path);
    return path;
  }
}

function children(dir: string): string[] {
  const prefix = dir + "/";
  return store()
    .under(dir)
    .filter((p) => !p.slice(prefix.length).includes("/"));
}

function readdirSync(p: PathLike, options?: unknown): (string | Dirent)[] {
  const path = resolvePath(p, "scandir");
  const entry = store().get(path);
  if (!entry) throw fsError("ENOENT", "scandir", path);
  if (entry.kind !== "dir") throw fsError("ENOTDIR", "scandir", path);
  const withTypes = typeof options === "object" && options !== null && (options as { withFileTypes?: boolean }).withFileTypes === true;
  const recursive = typeof options === "object" && options !== null && (options as { recursive?: boolean }).recursive === true;
  const found = recursive ? store().under(path) : children(path);
  return found.map((full) => {
    const name = full.slice(path.length + 1);
    if (!withTypes) return name;
    return new Dirent(full.slice(full.lastIndexOf("/") + 1), parentOf(full), store().get(full)?.kind === "dir");
  });
}

function unlinkSync(p: PathLike): void {
  const path = resolvePath(p, "unlink");
  const entry = store().get(path);
  if (!entry) throw fsError("ENOENT", "unlink", path);
  if (entry.kind === "dir") throw fsError("EISDIR", "unlink", path);
  store().remove(path);
}

function rmSync(p: PathLike, options?: { recursive?: boolean; force?: boolean }): void {
  const path = resolvePath(p, "rm");
  const entry = store().get(path);
  if (!entry) {
    if (options?.force) return;
    throw fsError("ENOENT", "rm", path);
  }
  if (entry.kind === "dir") {
    if (!options?.recursive) throw Object.assign(fsError("EISDIR", "rm", path), { code: "ERR_FS_EISDIR" });
    for (const child of store().under(path)) store().remove(child);
    // /tmp itself stays: it is the run's root.
    if (path === "/tmp") return;
  }
  store().remove(path);
}

function rmdirSync(p: PathLike, options?: { recursive?: boolean }): void {
  const path = resolvePath(p, "rmdir");
  const entry = store().get(path);
  if (!entry) throw fsError("ENOENT", "rmdir", path);
  if (entry.kind !== "dir") throw fsError("ENOTDIR", "rmdir", path);
  if (path === "/tmp") throw fsError("EACCES", "rmdir", path);
  if (!options?.recursive && store().under(path).length > 0) throw fsError("ENOTEMPTY", "rmdir", path);
  for (const child of store().under(path)) store().remove(child);
  store().remove(path);
}

function renameSync(from: PathLike, to: PathLike): void {
  const source = resolvePath(from, "rename");
  const target = resolvePath(to, "rename");
  const entry = store().get(source);
  if (!entry || source === "/tmp") throw fsError(entry ? "EACCES" : "ENOENT", "rename", source, target);
  requireParentDir(target, "rename");
  if (target.startsWith(source + "/")) throw fsError("EINVAL", "rename", source, target);
  const moved = entry.kind === "dir" ? store().under(source) : [];
  store().move(source, target);
  for (const child of moved) store().move(child, target + child.slice(source.length));
}

function copyFileSync(from: PathLike, to: PathLike, mode?: number): void {
  const source = resolvePath(from, "copyfile");
  const target = resolvePath(to, "copyfile");
  const entry = store().get(source);
  if (!entry) throw fsError("ENOENT", "copyfile", source, target);
  if (entry.kind === "dir") throw fsError("EISDIR", "copyfile", source, target);
  if (mode !== undefined && (mode & 1) !== 0 && store().get(target)) throw fsError("EEXIST", "copyfile", source, target);
  requireParentDir(target, "copyfile");
  store().write(target, entry.data);
}

function truncateSync(p: PathLike, length = 0): void {
  const path = resolvePath(p, "open");
  const entry = store().get(path);
  if (!entry) throw fsError("ENOENT", "open", path);
  const next = Buffer.alloc(length);
  next.set(entry.data.subarray(0, Math.min(length, entry.data.byteLength)));
  store().write(path, next);
}

function realpathSync(p: PathLike): string {
  const path = resolvePath(p, "realpath");
  if (!store().get(path)) throw fsError("ENOENT", "realpath", path);
  return path;
}

function utimesSync(p: PathLike, _atime: unknown, mtime: unknown): void {
  const path = resolvePath(p, "utime");
  const entry = store().get(path);
  if (!entry) throw fsError("ENOENT", "utime", path);
  entry.mtimeMs = mtime instanceof Date ? mtime.getTime() : Number(mtime) * 1000;
}

// ---- file descriptors (a handful of libraries write through them) ----

interface Descriptor {
  path: string;
  position: number;
  append: boolean;
  readable: boolean;
  writable: boolean;
  data(): Uint8Array;
  write(bytes: Buffer, position: number | null): number;
}

const descriptors = new Map<number, Descriptor>();
let nextFd = 10;

function descriptor(fd: number, syscall: string): Descriptor {
  const d = descriptors.get(fd);
  if (!d || store().get(d.path) === undefined) throw fsError("EBADF", syscall);
  return d;
}

function openSync(p: PathLike, flags: string | number = "r"): number {
  const path = resolvePath(p, "open");
  const flag = typeof flags === "number" ? (flags & 3 ? "w" : "r") : flags;
  const entry = store().get(path);
  if (entry?.kind === "dir" && flag !== "r") throw fsError("EISDIR", "open", path);
  if (flag.startsWith("r")) {
    if (!entry) throw fsError("ENOENT", "open", path);
  } else {
    if (flag.includes("x") && entry) throw fsError("EEXIST", "open", path);
    requireParentDir(path, "open");
    if (!entry || flag.startsWith("w")) store().write(path, new Uint8Array(0));
  }
  const fd = nextFd++;
  descriptors.set(fd, {
    path,
    position: 0,
    append: flag.startsWith("a"),
    readable: flag.startsWith("r") || flag.includes("+"),
    writable: !flag.startsWith("r") || flag.includes("+"),
    data: () => store().get(path)?.data ?? new Uint8Array(0),
    write(bytes, position) {
      const current = store().get(path)?.data ?? new Uint8Array(0);
      const at = this.append ? current.byteLength : (position ?? this.position);
      const next = Buffer.alloc(Math.max(current.byteLength, at + bytes.byteLength));
      next.set(current);
      next.set(bytes, at);
      store().write(path, next);
      if (position === null || this.append) this.position = at + bytes.byteLength;
      return bytes.byteLength;
    },
  });
  return fd;
}

function closeSync(fd: number): void {
  if (!descriptors.delete(fd)) throw fsError("EBADF", "close");
}

function writeSync(fd: number, data: unknown, ...rest: unknown[]): number {
  const d = descriptor(fd, "write");
  if (!d.writable) throw fsError("EBADF", "write");
  if (typeof data === "string") {
    const position = typeof rest[0] === "number" ? rest[0] : null;
    return d.write(Buffer.from(data, (typeof rest[1] === "string" ? rest[1] : "utf8") as BufferEncoding), position);
  }
  const bytes = toBytes(data, null);
  const offset = typeof rest[0] === "number" ? rest[0] : 0;
  const length = typeof rest[1] === "number" ? rest[1] : bytes.byteLength - offset;
  const position = typeof rest[2] === "number" ? rest[2] : null;
  return d.write(bytes.subarray(offset, offset + length), position);
}

function readSync(fd: number, buffer: Uint8Array, offset = 0, length = buffer.byteLength - offset, position: number | null = null): number {
  const d = descriptor(fd, "read");
  if (!d.readable) throw fsError("EBADF", "read");
  const data = d.data();
  const at = position ?? d.position;
  const chunk = data.subarray(at, Math.min(data.byteLength, at + length));
  buffer.set(chunk, offset);
  if (position === null) d.position = at + chunk.byteLength;
  return chunk.byteLength;
}

function fstatSync(fd: number): Stats {
  const d = descriptor(fd, "fstat");
  return new Stats(store().get(d.path)!, inode(d.path));
}

// ---- streams ----

const { Readable, Writable } = Stream;

/** Node's fs.ReadStream over the run's /tmp: the file read at its first read, handed out in chunks. */
export class ReadStream extends Readable {
  readonly path: string;
  bytesRead = 0;
  pending = false;
  readonly #size: number;
  readonly #end: number | undefined;
  readonly #encoding: BufferEncoding | undefined;
  #position: number;
  #opened: Uint8Array | undefined;

  constructor(p: PathLike, options?: unknown) {
    const opts = (typeof options === "string" ? { encoding: options } : (options ?? {})) as {
      encoding?: BufferEncoding;
      start?: number;
      end?: number;
      highWaterMark?: number;
    };
    const size = opts.highWaterMark ?? 64 * 1024;
    super({ highWaterMark: size });
    this.path = resolvePath(p, "open");
    this.#size = size;
    this.#end = opts.end;
    this.#encoding = opts.encoding;
    this.#position = opts.start ?? 0;
  }

  override _read(): void {
    try {
      this.#opened ??= (readFileSync(this.path) as Buffer).subarray(0, this.#end === undefined ? undefined : this.#end + 1);
    } catch (err) {
      this.destroy(err as Error);
      return;
    }
    if (this.#position >= this.#opened.byteLength) {
      this.push(null);
      return;
    }
    const chunk = Buffer.from(this.#opened.subarray(this.#position, this.#position + this.#size));
    this.#position += chunk.byteLength;
    this.bytesRead += chunk.byteLength;
    this.push(this.#encoding ? chunk.toString(this.#encoding) : chunk);
  }
}

/** Node's fs.WriteStream over the run's /tmp: the file opened at the first write (or at the end), written as chunks come. */
export class WriteStream extends Writable {
  readonly path: string;
  bytesWritten = 0;
  pending = false;
  readonly #flags: string;
  #fd: number | undefined;

  constructor(p: PathLike, options?: unknown) {
    const opts = (typeof options === "string" ? { encoding: options } : (options ?? {})) as { flags?: string; encoding?: BufferEncoding };
    super();
    this.path = resolvePath(p, "open");
    this.#flags = opts.flags ?? "w";
  }

  override _write(chunk: unknown, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    try {
      this.#fd ??= openSync(this.path, this.#flags);
      const bytes = toBytes(chunk, encoding);
      writeSync(this.#fd, bytes);
      this.bytesWritten += bytes.byteLength;
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _final(callback: (error?: Error | null) => void): void {
    try {
      this.#fd ??= openSync(this.path, this.#flags);
      closeSync(this.#fd);
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }
}

const createReadStream = (p: PathLike, options?: unknown) => new ReadStream(p, options);
// The platform's getFileStream(path) answers this module's ReadStream once the component has it.
internals().registerReadStream((p) => new ReadStream(p));
const createWriteStream = (p: PathLike, options?: unknown) => new WriteStream(p, options);

// ---- callback and promise forms ----

/** fn(...args, callback) from a sync operation: the callback runs on a later tick, as Node's. */
function callbackForm<A extends unknown[], R>(fn: (...args: A) => R) {
  return (...args: unknown[]) => {
    const callback = args.pop();
    if (typeof callback !== "function")
      throw Object.assign(new TypeError('The "cb" argument must be of type function'), { code: "ERR_INVALID_ARG_TYPE" });
    let result: R;
    try {
      result = fn(...(args as A));
    } catch (err) {
      queueMicrotask(() => (callback as Callback<R>)(err as NodeJS.ErrnoException));
      return;
    }
    queueMicrotask(() => (callback as Callback<R>)(null, result));
  };
}

function promiseForm<A extends unknown[], R>(fn: (...args: A) => R) {
  return (...args: A): Promise<R> => {
    try {
      return Promise.resolve(fn(...args));
    } catch (err) {
      return Promise.reject(err);
    }
  };
}

const sync = {
  existsSync,
  accessSync,
  statSync,
  lstatSync: statSync,
  fstatSync,
  readFileSync,
  writeFileSync,
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  unlinkSync,
  rmSync,
  rmdirSync,
  renameSync,
  copyFileSync,
  truncateSync,
  realpathSync: Object.assign(realpathSync, { native: realpathSync }),
  utimesSync,
  chmodSync: (p: PathLike) => void statSync(p),
  chownSync: (p: PathLike) => void statSync(p),
  openSync,
  closeSync,
  readSync,
  writeSync,
  fsyncSync: (fd: number) => void descriptor(fd, "fsync"),
};

const callbacks: Record<string, unknown> = {};
const promises: Record<string, unknown> = {};
for (const [name, fn] of Object.entries(sync)) {
  const base = name.slice(0, -"Sync".length);
  callbacks[base] = callbackForm(fn as (...a: unknown[]) => unknown);
  if (!["exists", "fstat", "open", "close", "read", "write", "fsync"].includes(base))
    promises[base] = promiseForm(fn as (...a: unknown[]) => unknown);
}
// fs.exists(path, cb) calls back with the answer alone.
callbacks["exists"] = (p: PathLike, callback: (exists: boolean) => void) => queueMicrotask(() => callback(existsSync(p)));

export const constants = {
  F_OK: 0,
  R_OK: 4,
  W_OK: 2,
  X_OK: 1,
  O_RDONLY: 0,
  O_WRONLY: 1,
  O_RDWR: 2,
  O_CREAT: 64,
  O_EXCL: 128,
  O_TRUNC: 512,
  O_APPEND: 1024,
  COPYFILE_EXCL: 1,
  COPYFILE_FICLONE: 2,
  COPYFILE_FICLONE_FORCE: 4,
};

const unavailable = (name: string) => () => {
  throw new Error(`fs.${name} is not available in the sandbox`);
};

export const fsPromises = { ...promises, constants };

export default {
  ...sync,
  ...callbacks,
  createReadStream,
  createWriteStream,
  ReadStream,
  WriteStream,
  Stats,
  Dirent,
  constants,
  ...constants,
  promises: fsPromises,
  watch: unavailable("watch"),
  watchFile: unavailable("watchFile"),
  unwatchFile: unavailable("unwatchFile"),
  symlinkSync: unavailable("symlinkSync"),
  symlink: unavailable("symlink"),
  linkSync: unavailable("linkSync"),
  link: unavailable("link"),
};
