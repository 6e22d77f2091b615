// Import specifiers of component code: Node built-ins, Headwater's own modules, and npm packages
// with an optional version or range ("lodash.get@4.4.2", "uuid@^9", "@scope/pkg@1/sub/path").
import { builtinModules } from "node:module";
import semver from "semver";

/** Built-ins the prelude provides to every isolate (its own implementations, small). */
export const SANDBOX_BUILTINS = new Set([
  "crypto",
  "buffer",
  "url",
  "querystring",
  "util",
  "events",
  "timers",
  "timers/promises",
  "process",
  "perf_hooks",
  "util/types",
  "console",
]);

/**
 * Built-ins bundled into a component only when it (or a package it uses) imports them: the
 * heavier polyfills, kept out of the prelude every isolate runs. "./x.js" names a module of
 * src/runtime/isolate/node/, anything else an npm polyfill among Headwater's dependencies.
 */
export const LAZY_BUILTINS: ReadonlyMap<string, string> = new Map([
  ["stream", "./stream.js"],
  ["stream/promises", "./streamPromises.js"],
  ["stream/web", "./streamWeb.js"],
  ["http", "./http.js"],
  ["https", "./https.js"],
  ["fs", "./fs.js"],
  ["fs/promises", "./fsPromises.js"],
  ["os", "./os.js"],
  ["zlib", "./zlib.js"],
  ["assert/strict", "./assertStrict.js"],
  ["path", "path-browserify"],
  ["path/posix", "path-browserify"],
  ["string_decoder", "string_decoder/"],
  ["assert", "assert/"],
]);

/**
 * How many folders, from an importing module's own upward, are searched for the package.json that
 * pins the npm packages it imports without a version: by the bundler, and by the user CLI, which
 * uploads the one it finds.
 */
export const MANIFEST_LEVELS = 6;

/** Every built-in a component may import by name. */
export const AVAILABLE_BUILTINS = [...SANDBOX_BUILTINS, ...LAZY_BUILTINS.keys()].sort();

/** Packages served by Headwater's own modules instead of npm: the platform, HTTP clients and form-data. */
export const SANDBOX_PACKAGES = new Set([
  "@pipedream/platform",
  "@pipedream/types",
  "axios",
  "node-fetch",
  "cross-fetch",
  "isomorphic-fetch",
  "form-data",
  "undici",
]);

const NODE_BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith("_")));

export function builtinName(spec: string): string | undefined {
  const id = spec.startsWith("node:") ? spec.slice(5) : spec;
  return NODE_BUILTINS.has(id) || NODE_BUILTINS.has(id.split("/")[0]) || spec.startsWith("node:") ? id : undefined;
}

export interface NpmSpecifier {
  readonly name: string;
  /** A semver range, an exact version, a dist-tag, or undefined for "the newest". */
  readonly range: string | undefined;
  /** "/sub/path" inside the package, or "". */
  readonly subpath: string;
}

const NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/i;

export function parseNpmSpecifier(spec: string): NpmSpecifier | undefined {
  if (spec.startsWith(".") || spec.startsWith("/") || /^[a-z][a-z0-9+.-]*:/i.test(spec)) return undefined;
  let rest = spec;
  let scope = "";
  if (rest.startsWith("@")) {
    const slash = rest.indexOf("/");
    if (slash === -1) return undefined;
    scope = rest.slice(0, slash + 1);
    rest = rest.slice(slash + 1);
  }
  // name[@range][/subpath]: the range ends at the first "/" after the "@".
  const at = rest.indexOf("@");
  const firstSlash = rest.indexOf("/");
  let name: string;
  let range: string | undefined;
  let subpath: string;
  if (at !== -1 && (firstSlash === -1 || at < firstSlash)) {
    name = rest.slice(0, at);
    const after = rest.slice(at + 1);
    const slash = after.indexOf("/");
    range = slash === -1 ? after : after.slice(0, slash);
    subpath = slash === -1 ? "" : after.slice(slash);
    if (range === "") range = undefined;
  } else {
    name = firstSlash === -1 ? rest : rest.slice(0, firstSlash);
    subpath = firstSlash === -1 ? "" : rest.slice(firstSlash);
  }
  const full = scope + name;
  if (!NAME.test(full)) return undefined;
  return { name: full, range, subpath };
}

export function isValidRange(range: string): boolean {
  return semver.validRange(range) !== null;
}

/** The package an imported file belongs to, from its path inside node_modules. */
export function packageOfPath(path: string): string | undefined {
  const idx = path.lastIndexOf("node_modules/");
  if (idx === -1) return undefined;
  const parts = path.slice(idx + "node_modules/".length).split("/");
  return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
}
