// npm packages for components, installed from the registry into a content-addressed cache on the
// host. Layout under <cacheDir>/npm:
//   store/<hex of the package tarball's integrity>/node_modules/...   the installed tree, immutable
//   index/<url-encoded name>.json  { "versions": { "4.4.2": "<store key>" } }
//   tmp/   installs in progress (renamed into store/ when complete)
//   npm-cache/   npm's own download cache
// A specifier is served from the cache when a cached version satisfies it, so a second prepare
// of the same code never reaches the registry.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import semver from "semver";

export interface InstalledPackage {
  readonly name: string;
  readonly version: string;
  /** Directory that holds node_modules/<name>. */
  readonly root: string;
  readonly integrity: string;
  /** Whether the registry was asked (false: served from the cache). */
  readonly fromRegistry: boolean;
}

export class NpmInstallError extends Error {
  override readonly name = "NpmInstallError";
  constructor(
    readonly packageSpec: string,
    message: string,
  ) {
    super(message);
  }
}

export interface NpmCacheOptions {
  readonly cacheDir: string;
  /** Default https://registry.npmjs.org/ */
  readonly registry?: string;
  /** The npm executable, default "npm" on PATH. */
  readonly npmCommand?: string;
  readonly installTimeoutMs?: number;
}

interface Index {
  versions: Record<string, string>;
}

export class NpmCache {
  readonly root: string;
  readonly registry: string;
  private readonly npmCommand: string;
  private readonly installTimeoutMs: number;
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(opts: NpmCacheOptions) {
    this.root = path.join(opts.cacheDir, "npm");
    this.registry = opts.registry ?? "https://registry.npmjs.org/";
    this.npmCommand = opts.npmCommand ?? "npm";
    this.installTimeoutMs = opts.installTimeoutMs ?? 180_000;
  }

  private indexPath(name: string): string {
    return path.join(this.root, "index", `${encodeURIComponent(name)}.json`);
  }

  private async readIndex(name: string): Promise<Index> {
    try {
      return JSON.parse(await fs.readFile(this.indexPath(name), "utf8")) as Index;
    } catch {
      return { versions: {} };
    }
  }

  /** The cached version that serves `range`, if any (newest satisfying). */
  async cached(name: string, range: string | undefined): Promise<InstalledPackage | undefined> {
    const index = await this.readIndex(name);
    const versions = Object.keys(index.versions);
    let version: string | null = null;
    if (range === undefined || range === "latest")
      version = semver.maxSatisfying(versions, "*", { includePrerelease: false }) ?? versions.sort(semver.rcompare)[0] ?? null;
    else if (semver.validRange(range)) version = semver.maxSatisfying(versions, range);
    if (!version) return undefined;
    const key = index.versions[version];
    const root = path.join(this.root, "store", key);
    try {
      await fs.access(path.join(root, "node_modules", name, "package.json"));
    } catch {
      return undefined;
    }
    return { name, version, root, integrity: key, fromRegistry: false };
  }

  /** Installs (or finds in the cache) a version of `name` that satisfies `range`. */
  async ensure(name: string, range: string | undefined): Promise<InstalledPackage> {
    const hit = await this.cached(name, range);
    if (hit) return hit;
    const lockKey = `${name}@${range ?? ""}`;
    const running = this.locks.get(lockKey);
    if (running) return (await running) as InstalledPackage;
    const job = this.install(name, range).finally(() => this.locks.delete(lockKey));
    this.locks.set(lockKey, job);
    return job;
  }

  private async install(name: string, range: string | undefined): Promise<InstalledPackage> {
    const spec = `${name}@${range ?? "latest"}`;
    await fs.mkdir(path.join(this.root, "tmp"), { recursive: true });
    await fs.mkdir(path.join(this.root, "store"), { recursive: true });
    await fs.mkdir(path.join(this.root, "index"), { recursive: true });
    const tmp = await fs.mkdtemp(path.join(this.root, "tmp", "install-"));
    try {
      await fs.writeFile(path.join(tmp, "package.json"), JSON.stringify({ name: "headwater-npm-install", private: true }));
      await this.runNpm(spec, tmp);
      const pkgJson = JSON.parse(await fs.readFile(path.join(tmp, "node_modules", name, "package.json"), "utf8")) as { version: string };
      const lock = JSON.parse(await fs.readFile(path.join(tmp, "node_modules", ".package-lock.json"), "utf8")) as {
        packages: Record<string, { integrity?: string }>;
      };
      const integrity =
        lock.packages[`node_modules/${name}`]?.integrity ??
        `sha256-${createHash("sha256").update(`${name}@${pkgJson.version}`).digest("base64")}`;
      const key = storeKey(integrity);
      const target = path.join(this.root, "store", key);
      await fs.writeFile(
        path.join(tmp, "headwater-package.json"),
        JSON.stringify({ name, version: pkgJson.version, integrity, installedAt: new Date().toISOString() }),
      );
      try {
        await fs.rename(tmp, target);
      } catch {
        // Another install of the same content won the race: keep theirs.
        await fs.rm(tmp, { recursive: true, force: true });
      }
      await this.addToIndex(name, pkgJson.version, key);
      return { name, version: pkgJson.version, root: target, integrity: key, fromRegistry: true };
    } catch (err) {
      await fs.rm(tmp, { recursive: true, force: true });
      if (err instanceof NpmInstallError) throw err;
      throw new NpmInstallError(spec, `npm package "${spec}" could not be installed: ${(err as Error).message}`);
    }
  }

  private async addToIndex(name: string, version: string, key: string): Promise<void> {
    const index = await this.readIndex(name);
    index.versions[version] = key;
    const file = this.indexPath(name);
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    await fs.writeFile(tmp, JSON.stringify(index, null, 2));
    await fs.rename(tmp, file);
  }

  private runNpm(spec: string, dir: string): Promise<void> {
    const args = [
      "install",
      spec,
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      "--omit=dev",
      "--no-save",
      "--loglevel=error",
      "--fetch-retries=1",
      "--fetch-timeout=30000",
      `--registry=${this.registry}`,
      `--cache=${path.join(this.root, "npm-cache")}`,
      "--prefix",
      dir,
    ];
    return new Promise((resolve, reject) => {
      const child = spawn(this.npmCommand, args, {
        cwd: dir,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, npm_config_update_notifier: "false" },
      });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        if (stderr.length < 64 * 1024) stderr += d.toString();
      });
      child.stdout.resume();
      const timer = setTimeout(() => child.kill("SIGKILL"), this.installTimeoutMs);
      child.on("error", (err) => {
        clearTimeout(timer);
        reject(new NpmInstallError(spec, `npm package "${spec}" could not be installed: cannot run npm (${err.message})`));
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        if (code === 0) return resolve();
        reject(new NpmInstallError(spec, `npm package "${spec}" could not be installed: ${summarizeNpmError(stderr, signal)}`));
      });
    });
  }
}

function storeKey(integrity: string): string {
  const dash = integrity.indexOf("-");
  const algo = integrity.slice(0, dash);
  const hex = Buffer.from(integrity.slice(dash + 1), "base64").toString("hex");
  return `${algo}-${hex}`;
}

function summarizeNpmError(stderr: string, signal: NodeJS.Signals | null): string {
  if (signal) return `npm was stopped (${signal}), the install took too long`;
  const lines = stderr
    .split("\n")
    .map((l) => l.replace(/^npm (error|ERR!)\s*/, "").trim())
    .filter((l) => l && !/^A complete log of this run/.test(l) && !/^\s*$/.test(l) && !/_logs\//.test(l));
  const notFound = lines.find((l) => /404|E404|No matching version|ETARGET/i.test(l));
  if (notFound) {
    const target = lines.find((l) => /No matching version/i.test(l));
    return target ?? `not found in the registry (${lines.find((l) => /404 Not Found/i.test(l)) ?? notFound})`;
  }
  return lines.slice(0, 4).join(" | ") || "npm failed";
}
