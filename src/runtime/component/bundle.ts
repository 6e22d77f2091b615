// Bundling a component for the isolate with esbuild: the entry code, modules it imports by
// relative path (fetched relative to component_url), the sandbox's built-in modules, and npm
// packages from the host cache. The output is one script: __hw_define(function (module, exports,
// require) { ...CommonJS... }), which the prelude runs to obtain the component.
import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import type { Problem } from "../errors.js";
import { ModuleFetchError, UPLOAD_BASE, type ModuleLoader } from "./moduleSource.js";
import type { NpmCache } from "./npmCache.js";
import { STUBBED_BUILTINS, stubModuleSource } from "./stubModules.js";
import {
  AVAILABLE_BUILTINS,
  builtinName,
  isValidRange,
  LAZY_BUILTINS,
  MANIFEST_LEVELS,
  packageOfPath,
  parseNpmSpecifier,
  SANDBOX_BUILTINS,
  SANDBOX_PACKAGES,
} from "./specifier.js";

export interface BundleInput {
  readonly code: string;
  readonly url?: string;
  readonly typescript?: boolean;
}

export interface BundleResult {
  readonly bundle: string;
  readonly packages: { name: string; version: string }[];
  readonly modules: string[];
  readonly moduleFormat: "esm" | "cjs";
  /** The folder of each npm package in the bundle, to say which one a load failure came from. */
  readonly packageDirs: string[];
}

export class BundleError extends Error {
  override readonly name = "BundleError";
  constructor(readonly problems: Problem[]) {
    super(problems.map((p) => p.message).join("; "));
  }
}

const ENTRY = "component-entry";
/** An `import` or `export` statement at the start of a line: the code is an ES module. */
const MODULE_SYNTAX = /^[ \t]*(?:import[ \t]*(?:[\w${*"']|\()|export[ \t]+(?:default|const|let|var|function|class|async|\{|\*))/m;

/**
 * The entry's module name. An ES module is named `.mjs`, as published components are, so that it
 * imports CommonJS packages as Node does: the default import is `module.exports` even when the
 * package marks itself `__esModule` (`import dropbox from "dropbox"; dropbox.Dropbox`), where a
 * nameless entry would get esbuild's Babel-style `exports.default` (undefined there). TypeScript
 * keeps TypeScript's own interop.
 */
const entryName = (code: string, typescript: boolean): string => (!typescript && MODULE_SYNTAX.test(code) ? `${ENTRY}.mjs` : ENTRY);
/** The Node modules bundled on demand (src/runtime/isolate/node/, compiled beside this folder). */
const NODE_MODULES_DIR = fileURLToPath(new URL("../isolate/node/", import.meta.url));
/**
 * Web globals bundled only into components that name them (esbuild's `inject`: a free reference
 * to an export of one of these files becomes an import of it; unused, the file is left out), as
 * they are too heavy for every isolate's prelude.
 */
const INJECTED_GLOBALS = ["xmlDom.js"].map((file) => fileURLToPath(new URL(`../isolate/globals/${file}`, import.meta.url)));
/** Packages ask for the npm polyfills of these with a trailing slash ("process/"): the prelude's serve them. */
const PRELUDE_PACKAGES = new Set(["process/", "buffer/", "events/"]);
const MAX_MODULES = 50;
/** How many package.json files one save may fetch (see MANIFEST_LEVELS). */
const MAX_MANIFEST_LOOKUPS = 16;

/** What Node, TypeScript and Pipedream try for a relative specifier without a known extension, in order. */
const EXTENSIONS = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".json"];
const KNOWN_EXTENSION = /\.(m?js|cjs|m?ts|cts|json)$/;

/** The URLs a relative import may name: as written, with an extension, or a directory's index file. */
export function moduleCandidates(url: string): string[] {
  const [path, rest = ""] = url.split(/(?=[?#])/);
  if (KNOWN_EXTENSION.test(path)) return [url];
  const base = path.replace(/\/+$/, "");
  return [
    ...(path.endsWith("/") ? [] : [url]),
    ...EXTENSIONS.map((e) => base + e + rest),
    ...EXTENSIONS.map((e) => `${base}/index${e}${rest}`),
  ];
}

function loaderFor(url: string, typescript: boolean): esbuild.Loader {
  const pathname = url.split(/[?#]/)[0];
  if (/\.(ts|mts|cts)$/.test(pathname)) return "ts";
  if (/\.json$/.test(pathname)) return "json";
  if (/\.(js|mjs|cjs)$/.test(pathname)) return "js";
  return typescript ? "ts" : "js";
}

function who(importer: string, namespace: string): string {
  if (namespace === "file") {
    const pkg = packageOfPath(importer);
    return pkg ? `npm package "${pkg}"` : importer;
  }
  if (namespace === "remote") return importer;
  return "the component";
}

export async function bundleComponent(input: BundleInput, deps: { npm: NpmCache; loadModule: ModuleLoader }): Promise<BundleResult> {
  const packages = new Map<string, string>();
  const modules: string[] = [];
  // Texts fetched while resolving (probing extensions), kept for the load that follows.
  const fetched = new Map<string, string>();
  const missing = new Set<string>();
  /** The first candidate of `url` that exists (fetching it), or undefined when none does. */
  const locate = async (url: string): Promise<string | undefined> => {
    for (const candidate of moduleCandidates(url)) {
      if (fetched.has(candidate)) return candidate;
      if (missing.has(candidate)) continue;
      if (fetched.size + missing.size >= MAX_MODULES * 4)
        throw new ModuleFetchError(`too many module lookups (more than ${MAX_MODULES * 4})`);
      try {
        fetched.set(candidate, await deps.loadModule(candidate));
        return candidate;
      } catch (err) {
        if (!(err instanceof ModuleFetchError && err.missing)) throw err;
        missing.add(candidate);
      }
    }
    return undefined;
  };
  /** The dependencies of the package.json in `dir`: undefined when there is none, {} when it is no manifest. */
  const readManifest = async (dir: string): Promise<Record<string, unknown> | undefined> => {
    let text: string;
    try {
      text = await deps.loadModule(`${dir}package.json`);
    } catch {
      return undefined;
    }
    try {
      const dependencies = (JSON.parse(text) as { dependencies?: unknown } | null)?.dependencies;
      return typeof dependencies === "object" && dependencies !== null ? (dependencies as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  const manifests = new Map<string, Promise<Record<string, unknown> | undefined>>();
  const manifestAt = (dir: string): Promise<Record<string, unknown> | undefined> => {
    let found = manifests.get(dir);
    if (!found) {
      found = manifests.size >= MAX_MANIFEST_LOOKUPS ? Promise.resolve(undefined) : readManifest(dir);
      manifests.set(dir, found);
    }
    return found;
  };
  /**
   * The range the component's own package.json gives an npm package it imports without a version,
   * as the published components declare theirs (components/<app>/package.json): the nearest
   * package.json above the importing module decides, as it would for the app's directory in a
   * checkout. None found, or the package not among its dependencies: undefined (the newest).
   * A manifest that cannot be fetched or read counts as none: it only ever refines a version.
   */
  const declaredRange = async (importer: string | undefined, name: string): Promise<string | undefined> => {
    if (importer === undefined) return undefined;
    let dir: string;
    try {
      dir = new URL("./", importer).toString();
    } catch {
      return undefined;
    }
    for (let level = 0; level < MANIFEST_LEVELS; level++) {
      const dependencies = await manifestAt(dir);
      if (dependencies !== undefined) {
        const range = dependencies[name];
        return typeof range === "string" && isValidRange(range) ? range : undefined;
      }
      const parent = new URL("../", dir).toString();
      if (parent === dir) return undefined;
      dir = parent;
    }
    return undefined;
  };
  // TypeScript when asked, or when component_url names a .ts file.
  const typescript = input.typescript ?? (input.url !== undefined && /\.(ts|mts|cts)$/.test(input.url.split(/[?#]/)[0]));

  const entry = entryName(input.code, typescript);
  /** Package files that import `module` (createRequire), found by the first build. */
  const moduleImporters = new Set<string>();
  /** Package files given to the second build rewritten (requireRewrites), by path. */
  let rewrites = new Map<string, string>();
  const plugin: esbuild.Plugin = {
    name: "headwater-component",
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if ((args.pluginData as { headwaterPassThrough?: boolean } | undefined)?.headwaterPassThrough) return undefined;
        // An injected global and its package have no side effects: a component that never names it leaves both out.
        if (args.kind === "entry-point") {
          return INJECTED_GLOBALS.includes(args.path) ? { path: args.path, sideEffects: false } : { path: entry, namespace: "component" };
        }
        if (INJECTED_GLOBALS.includes(args.importer)) {
          const resolved = await build.resolve(args.path, {
            kind: args.kind,
            resolveDir: args.resolveDir,
            importer: args.importer,
            pluginData: { headwaterPassThrough: true },
          });
          return resolved.errors.length > 0 ? { errors: resolved.errors } : { ...resolved, sideEffects: false };
        }
        const spec = args.path;
        const fromComponentCode = args.namespace === "component" || args.namespace === "remote";

        // Headwater's own modules: the platform, HTTP clients (served by the host bridge).
        const npmSpec = parseNpmSpecifier(spec);
        if (npmSpec && SANDBOX_PACKAGES.has(npmSpec.name) && npmSpec.subpath === "") {
          return { path: npmSpec.name, namespace: "sandbox-module" };
        }
        if (PRELUDE_PACKAGES.has(spec)) return { path: spec.slice(0, -1), namespace: "sandbox-module" };
        const builtin = builtinName(spec);
        if (builtin !== undefined) {
          if (SANDBOX_BUILTINS.has(builtin)) return { path: builtin, namespace: "sandbox-module" };
          const lazy = LAZY_BUILTINS.get(builtin);
          if (lazy !== undefined) {
            if (lazy.startsWith("./")) return { path: lazy.slice(2), namespace: "node-module" };
            const polyfill = await build.resolve(lazy, {
              kind: args.kind,
              resolveDir: NODE_MODULES_DIR,
              pluginData: { headwaterPassThrough: true },
            });
            if (polyfill.errors.length > 0) return { errors: polyfill.errors };
            return polyfill;
          }
          if (!fromComponentCode) {
            // A package may depend on an npm package of a built-in's name (punycode): it stands in
            // for the built-in the sandbox does not have (the trailing slash asks for the package).
            const mapped = await build.resolve(`${builtin}/`, {
              kind: args.kind,
              resolveDir: args.resolveDir,
              importer: args.importer,
              pluginData: { headwaterPassThrough: true },
            });
            if (mapped.errors.length === 0 && mapped.path && !mapped.external) return mapped;
            if (builtin === "module" && args.namespace === "file") moduleImporters.add(args.importer);
            // A package's import of a module the sandbox cannot offer: a stub that throws when used.
            if (STUBBED_BUILTINS.has(builtin)) return { path: builtin, namespace: "stub-module" };
          }
          return {
            errors: [
              {
                text: `${who(args.importer, args.namespace)} imports the Node module "${builtin}", which is not available in the sandbox (available: ${AVAILABLE_BUILTINS.join(", ")})`,
              },
            ],
          };
        }

        if (fromComponentCode) {
          if (spec.startsWith("./") || spec.startsWith("../") || spec.startsWith("/") || /^https?:\/\//i.test(spec)) {
            const base = args.namespace === "remote" ? args.importer : input.url;
            if (!base && !/^https?:\/\//i.test(spec)) {
              return { errors: [{ text: `the relative import "${spec}" needs a component_url to resolve against` }] };
            }
            let resolved: string;
            try {
              resolved = new URL(spec, base).toString();
            } catch {
              return { errors: [{ text: `cannot resolve "${spec}" against ${String(base)}` }] };
            }
            // As Node resolves relative specifiers: as written, then with each extension, then as a directory's index file.
            let located: string | undefined;
            try {
              located = await locate(resolved);
            } catch (err) {
              return { errors: [{ text: `cannot load the module ${resolved}: ${(err as Error).message}` }] };
            }
            if (!located) {
              const shown = resolved.startsWith(UPLOAD_BASE) ? resolved.slice(UPLOAD_BASE.length) : resolved;
              return {
                errors: [{ text: `cannot find the module "${spec}" (${shown}, with .js, .mjs, .cjs, .ts, .json or an index file)` }],
              };
            }
            return { path: located, namespace: "remote" };
          }
          if (!npmSpec) return { errors: [{ text: `"${spec}" is not a valid module specifier` }] };
          let installed;
          try {
            const range = npmSpec.range ?? (await declaredRange(args.namespace === "remote" ? args.importer : input.url, npmSpec.name));
            installed = await deps.npm.ensure(npmSpec.name, range);
          } catch (err) {
            return { errors: [{ text: (err as Error).message }] };
          }
          packages.set(installed.name, installed.version);
          const result = await build.resolve(`${npmSpec.name}${npmSpec.subpath}`, {
            kind: args.kind,
            resolveDir: installed.root,
            pluginData: { headwaterPassThrough: true },
          });
          if (result.errors.length > 0) {
            return {
              errors: [
                { text: `npm package "${npmSpec.name}@${installed.version}" cannot be bundled for the sandbox: ${result.errors[0].text}` },
              ],
            };
          }
          return result;
        }
        if (spec.endsWith(".node")) {
          return {
            errors: [{ text: `${who(args.importer, args.namespace)} loads a native addon (${spec}), which cannot run in the sandbox` }],
          };
        }
        return undefined;
      });

      build.onLoad({ filter: /.*/, namespace: "component" }, () => ({
        contents: input.code,
        loader: typescript ? "ts" : "js",
      }));

      build.onLoad({ filter: /.*/, namespace: "remote" }, async (args) => {
        if (modules.length >= MAX_MODULES)
          return { errors: [{ text: `a component may import at most ${MAX_MODULES} modules by path or URL` }] };
        modules.push(args.path);
        try {
          return { contents: fetched.get(args.path) ?? (await deps.loadModule(args.path)), loader: loaderFor(args.path, typescript) };
        } catch (err) {
          return { errors: [{ text: `cannot load the module ${args.path}: ${(err as Error).message}` }] };
        }
      });

      build.onLoad({ filter: /.*/, namespace: "sandbox-module" }, (args) => ({
        contents: `module.exports = globalThis.__hw_modules[${JSON.stringify(args.path)}];`,
        loader: "js",
      }));

      build.onLoad({ filter: /.*/, namespace: "stub-module" }, (args) => ({ contents: stubModuleSource(args.path), loader: "js" }));

      // Node's CommonJS shape (require("stream") is the Stream class) from each module's default export.
      build.onLoad({ filter: /.*/, namespace: "node-module" }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(NODE_MODULES_DIR + args.path)}).default;`,
        resolveDir: NODE_MODULES_DIR,
        loader: "js",
      }));

      // Only in the second build, and only for the files found to need it (see requireRewrites).
      if (rewrites.size > 0) {
        const only = new RegExp(`^(?:${[...rewrites.keys()].map(escapeRegExp).join("|")})$`);
        build.onLoad({ filter: only, namespace: "file" }, (args) => {
          const contents = rewrites.get(args.path);
          return contents === undefined ? undefined : { contents, loader: "js", resolveDir: path.dirname(args.path) };
        });
      }

      build.onLoad({ filter: /\.node$/ }, (args) => ({
        errors: [
          { text: `${who(args.path, "file")} contains a native addon (${args.path.split("/").pop()}), which cannot run in the sandbox` },
        ],
      }));
    },
  };

  const build = () =>
    esbuild.build({
      entryPoints: [ENTRY],
      bundle: true,
      write: false,
      metafile: true,
      format: "cjs",
      // Packages resolve as Node resolves them, the way published components run on Pipedream:
      // the "node" export conditions, `main` before `module`, no `browser` field. Their browser
      // builds missed what Node has (superagent's needs XMLHttpRequest; google-gax's has no grpc,
      // which @google-cloud/pubsub reads at load) and their `module` builds may differ from `main`
      // (the Microsoft Graph client's ES2015 class cannot be `new`ed where its ES5 build can).
      platform: "node",
      mainFields: ["main", "module"],
      target: "es2022",
      logLevel: "silent",
      legalComments: "none",
      charset: "utf8",
      // Names as written, not as bundling renamed them to avoid clashes (the bundled stream's
      // Readable was "Readable2"): code that reads `.name` or `constructor.name` sees Node's.
      keepNames: true,
      // `__dirname` is each module's own folder, relative: `require(__dirname + "/x.js")` (pg-format)
      // folds to `require("./x.js")` and is bundled; anything else that uses it gets "." rather
      // than a ReferenceError at load (there are no package files to read at run time).
      define: { "process.env.NODE_ENV": '"production"', global: "globalThis", __dirname: '"."' },
      banner: { js: "__hw_define(function (module, exports, require) {" },
      footer: { js: "});" },
      plugins: [plugin],
      inject: INJECTED_GLOBALS,
    });
  let result: esbuild.BuildResult & { metafile: esbuild.Metafile; outputFiles: esbuild.OutputFile[] };
  try {
    result = await build();
    // ES module packages that load CommonJS or JSON through `createRequire(import.meta.url)`
    // (@netlify/api): esbuild bundles only the free `require`, so those files are built again with
    // their own `require` taken away. Only then: every other save reads its files natively.
    rewrites = await requireRewrites(moduleImporters);
    if (rewrites.size > 0) result = await build();
  } catch (err) {
    const failure = err as esbuild.BuildFailure;
    if (Array.isArray(failure.errors)) {
      throw new BundleError(
        failure.errors.map((e) => ({
          path: e.location && e.location.file !== `component:${entry}` ? `(module ${e.location.file.replace(/^remote:/, "")})` : "(module)",
          message: e.location ? `${explained(e.text)} (line ${e.location.line}, column ${e.location.column + 1})` : explained(e.text),
        })),
      );
    }
    throw err;
  }
  const entryInput = result.metafile.inputs[`component:${entry}`];
  const packageDirs = new Set<string>();
  for (const input of Object.keys(result.metafile.inputs)) {
    const pkg = input.includes(":") ? undefined : packageOfPath(input);
    if (pkg !== undefined)
      packageDirs.add(path.resolve(input.slice(0, input.lastIndexOf(`node_modules/${pkg}/`) + `node_modules/${pkg}`.length)));
  }
  return {
    bundle: result.outputFiles[0].text,
    packages: [...packages.entries()].map(([name, version]) => ({ name, version })).sort((a, b) => a.name.localeCompare(b.name)),
    modules: [...modules].sort(),
    moduleFormat: entryInput?.format === "cjs" ? "cjs" : "esm",
    packageDirs: [...packageDirs].sort(),
  };
}

/** The words for WebAssembly the sandbox does not run; `owner` is the package or the component. */
const wasmRefused = (owner: string, file: string) =>
  `${owner} loads WebAssembly (${file}), which the sandbox does not run (its memory would escape the sandbox's limit)`;

/**
 * A load failure that names a `.wasm` file (a package's Node build reading its WebAssembly from
 * disk): said as WebAssembly not being run, naming the bundled package that ships the file.
 */
export async function explainWasmLoad(message: string, packageDirs: readonly string[]): Promise<string | undefined> {
  const file = /([\w.-]+\.wasm)\b/.exec(message)?.[1];
  if (file === undefined) return undefined;
  for (const dir of packageDirs) {
    const found = await fs.readdir(dir, { recursive: true }).then(
      (entries) => entries.some((entry) => entry === file || entry.endsWith(`/${file}`)),
      () => false,
    );
    if (found) return wasmRefused(`npm package "${packageOfPath(`${dir}/`) ?? path.basename(dir)}"`, file);
  }
  return wasmRefused("a package", file);
}

/** esbuild's words for a limit of how components are bundled, said in the component's terms. */
function explained(text: string): string {
  if (/^Top-level await is currently not supported/.test(text)) {
    return "top-level await is not supported in components (they are loaded synchronously): move the await into run, a hook or a method";
  }
  const wasm = /^No loader is configured for "\.wasm" files: (.+)$/.exec(text);
  if (wasm) {
    const file = wasm[1];
    const pkg = packageOfPath(file);
    return wasmRefused(pkg ? `npm package "${pkg}"` : "the component", file.split("/").pop() ?? file);
  }
  return text;
}

/** `const require = createRequire(import.meta.url)` and the like, in an ES module package file. */
const CREATE_REQUIRE =
  /\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:[A-Za-z_$][\w$]*\.)?createRequire\s*\(\s*import\.meta\.url\s*\)[ \t]*;?/g;

/**
 * The files among `importers` that make a `require` of their own with `createRequire(import.meta.url)`,
 * rewritten so that esbuild bundles what it loads: the declaration goes, and where the function
 * has another name its calls with a literal specifier become calls of the free `require`. Its
 * other uses (`req.resolve`) are left to esbuild's own run-time require, which refuses them.
 */
export async function requireRewrites(importers: Iterable<string>): Promise<Map<string, string>> {
  const rewritten = new Map<string, string>();
  for (const file of importers) {
    let text: string;
    try {
      text = await fs.readFile(file, "utf8");
    } catch {
      continue;
    }
    const names = new Set<string>();
    const without = text.replace(CREATE_REQUIRE, (_declaration, name: string) => {
      names.add(name);
      return name === "require" ? "" : `const ${name} = require;`;
    });
    if (names.size === 0) continue;
    let contents = without;
    for (const name of names) {
      if (name !== "require")
        contents = contents.replace(new RegExp(`(?<![\\w$.])${escapeRegExp(name)}\\s*\\(\\s*(?=["'\`])`, "g"), "require(");
    }
    rewritten.set(file, contents);
  }
  return rewritten;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
