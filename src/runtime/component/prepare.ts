// Saving component code: bundle it, load it in a throwaway isolate, validate what it exports,
// and return everything the platform keeps (bundle, metadata, configurable_props, code_hash).
import { createHash } from "node:crypto";
import { ComponentValidationError, type Problem } from "../errors.js";
import type { Runtime } from "../sandbox/runtime.js";
import type { PreparedComponent } from "../types.js";
import { BundleError, bundleComponent, explainWasmLoad } from "./bundle.js";
import { configurableProps } from "./configurableProps.js";
import { httpModuleLoader, UPLOAD_BASE, uploadedFilesLoader, type ModuleLoader } from "./moduleSource.js";
import { NpmCache } from "./npmCache.js";
import { validateDescription } from "./validate.js";

export interface PrepareInput {
  /** The entry module's code (for uploaded files: files[entry]). */
  readonly code: string;
  /** component_url: relative imports are fetched relative to it. */
  readonly url?: string;
  /** An uploaded multi-file component: relative imports resolve among these files (path → text). */
  readonly files?: Readonly<Record<string, string>>;
  /** The entry's path among `files`. */
  readonly entry?: string;
  /** Transpile the entry (and .ts modules) as TypeScript. */
  readonly typescript?: boolean;
}

export interface PrepareOptions {
  /** The runtime whose sandbox loads the code (a component may throw, loop or bloat on load). */
  readonly runtime: Runtime;
  /** Where npm packages are cached; defaults to the runtime's cacheDir. */
  readonly cacheDir?: string;
  /** npm registry URL (HEADWATER_NPM_REGISTRY), default https://registry.npmjs.org/ */
  readonly npmRegistry?: string;
  /** Lets relative-module fetches reach private addresses (tests, trusted networks). */
  readonly allowPrivateNetworks?: boolean;
  /** Replaces the HTTP loader of relative modules (e.g. the registry reading files from disk). */
  readonly loadModule?: ModuleLoader;
}

export function codeHash(code: string, files?: Readonly<Record<string, string>>, entry?: string): string {
  if (!files) return createHash("sha256").update(code, "utf8").digest("hex");
  // Every file counts: saving the same entry with a changed helper is different code.
  const canonical = JSON.stringify({
    entry,
    files: Object.keys(files)
      .sort()
      .map((path) => [path, files[path]]),
  });
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

const npmCaches = new Map<string, NpmCache>();

function npmCacheFor(cacheDir: string, registry: string | undefined): NpmCache {
  const key = `${cacheDir}\u0000${registry ?? ""}`;
  let cache = npmCaches.get(key);
  if (!cache) npmCaches.set(key, (cache = new NpmCache({ cacheDir, ...(registry ? { registry } : {}) })));
  return cache;
}

export async function prepareComponent(input: PrepareInput, opts: PrepareOptions): Promise<PreparedComponent> {
  if (typeof input.code !== "string" || input.code.trim() === "") {
    throw new ComponentValidationError([{ path: "(module)", message: "component code is empty" }]);
  }
  const hash = codeHash(input.code, input.files, input.entry);
  const npm = npmCacheFor(opts.cacheDir ?? opts.runtime.cacheDir, opts.npmRegistry);
  let loadModule =
    opts.loadModule ?? httpModuleLoader({ allowPrivateNetworks: opts.allowPrivateNetworks ?? opts.runtime.allowPrivateNetworks });
  let bundleInput: PrepareInput = input;
  if (input.files) {
    const entry = input.entry ?? "";
    if (input.files[entry] !== input.code) {
      throw new ComponentValidationError([{ path: "(module)", message: `the entry "${entry}" is not among the uploaded files` }]);
    }
    // Uploaded files import each other through a virtual base; nothing is fetched.
    loadModule = uploadedFilesLoader(input.files);
    bundleInput = { ...input, url: UPLOAD_BASE + entry.split("/").map(encodeURIComponent).join("/") };
  }
  let bundled;
  try {
    bundled = await bundleComponent(bundleInput, { npm, loadModule });
  } catch (err) {
    if (err instanceof BundleError) throw new ComponentValidationError(err.problems);
    throw err;
  }
  const described = await opts.runtime.describe(bundled.bundle);
  if (!described.ok) {
    const e = described.error;
    const wasm = e.code === "LOAD_ERROR" ? await explainWasmLoad(e.message, bundled.packageDirs) : undefined;
    const problem: Problem =
      wasm !== undefined
        ? { path: "(module)", message: wasm }
        : e.code === "LOAD_ERROR"
          ? { path: "(module)", message: `the component threw while loading: ${e.name}: ${e.message}` }
          : { path: "(module)", message: `the component could not be loaded: ${e.message}` };
    throw new ComponentValidationError([problem]);
  }
  const { problems, meta } = validateDescription(described.describe);
  if (problems.length > 0 || !meta) throw new ComponentValidationError(problems);
  return {
    codeHash: hash,
    bundleHash: createHash("sha256").update(bundled.bundle, "utf8").digest("hex"),
    bundle: bundled.bundle,
    meta,
    configurableProps: configurableProps(meta.props),
    packages: bundled.packages,
    modules: bundled.modules,
    moduleFormat: bundled.moduleFormat,
  };
}
