// What `deploy <file|dir|key>` sends: for a file, the file and every file its relative imports
// reach (recursively), as component_files {relative path → text} + component_entry; for a
// directory, its entry file the same way; anything else is a registry key.
//
// Imports are found by esbuild's parser (so comments, strings and TypeScript are understood) and
// resolved with exactly the server's candidate list (src/runtime/component/bundle.ts
// moduleCandidates): as written when the specifier has a known extension, else as written, then
// with .js/.mjs/.cjs/.ts/.mts/.cts/.json, then as a directory's index file.
import fs from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";
import { CliError, usage } from "../failure.js";
import { MANIFEST_LEVELS } from "../../runtime/component/specifier.js";

const EXTENSIONS = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".json"];
const KNOWN_EXTENSION = /\.(m?js|cjs|m?ts|cts|json)$/;
/** Files a directory's entry may be. */
const ENTRY_FILE = /^(?!.*\.(d|test|spec)\.[cm]?[jt]s$).+\.(m?js|cjs|m?ts|cts)$/;
const MAX_FILES = 50;

export type ComponentCode = { component_files: Record<string, string>; component_entry: string } | { key: string };

const isFile = (file: string) => {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

/** The server's candidates for a relative specifier, as absolute paths. */
export function candidates(resolveDir: string, specifier: string): string[] {
  const full = path.resolve(resolveDir, specifier);
  if (KNOWN_EXTENSION.test(specifier)) return [full];
  return [
    ...(specifier.endsWith("/") ? [] : [full]),
    ...EXTENSIONS.map((e) => full + e),
    ...EXTENSIONS.map((e) => path.join(full, `index${e}`)),
  ];
}

const isRelative = (specifier: string) => /^\.\.?(\/|$)/.test(specifier);

/** The entry of a directory: --entry, or its one component file. */
export function directoryEntry(dir: string, entry?: string): string {
  if (entry !== undefined) {
    const file = path.resolve(dir, entry);
    if (!isFile(file)) throw usage(`--entry ${entry}: no such file in ${dir}`);
    return file;
  }
  const files = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isFile() && ENTRY_FILE.test(d.name))
    .map((d) => d.name)
    .sort();
  let chosen = files;
  if (files.length > 1) {
    // Pipedream's layout has one component per folder beside helpers: prefer files that export one.
    chosen = files.filter((f) => /\bexport\s+default\b|\bmodule\.exports\b/.test(fs.readFileSync(path.join(dir, f), "utf8")));
  }
  if (chosen.length === 1) return path.join(dir, chosen[0]);
  if (files.length === 0) throw usage(`${dir} has no component file (*.mjs, *.js, *.ts): pass a file, or --entry`);
  throw usage(`${dir} has several component files (${(chosen.length ? chosen : files).join(", ")}): choose one with --entry`);
}

/** The nearest package.json in `dir` or above it, in the folders the server looks in among the uploaded files. */
function nearestManifest(dir: string): string | undefined {
  for (let level = 0; level < MANIFEST_LEVELS; level++) {
    const candidate = path.join(dir, "package.json");
    if (isFile(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

/**
 * The entry and every file its relative imports reach, keyed by path relative to their common
 * folder; when they import npm packages, the nearest package.json too, whose dependencies give the
 * versions of the packages imported without one (as for a published app's folder).
 */
export async function collectFiles(entryFile: string): Promise<{ files: Record<string, string>; entry: string }> {
  const esbuild = await import("esbuild");
  const entry = path.resolve(entryFile);
  const reached = new Set<string>([entry]);
  let importsPackages = false;
  try {
    await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      logLevel: "silent",
      platform: "node",
      format: "esm",
      plugins: [
        {
          name: "headwater-component-files",
          setup(build) {
            build.onResolve({ filter: /.*/ }, (args) => {
              if (args.kind === "entry-point") return { path: args.path };
              if (!isRelative(args.path)) {
                if (!isBuiltin(args.path)) importsPackages = true;
                return { path: args.path, external: true };
              }
              const found = candidates(args.resolveDir, args.path).find(isFile);
              if (!found) {
                return {
                  errors: [
                    {
                      text: `cannot find the module "${args.path}" imported by ${path.relative(process.cwd(), args.importer) || args.importer} (tried as written, with .js, .mjs, .cjs, .ts, .mts, .cts, .json, and index files)`,
                    },
                  ],
                };
              }
              reached.add(found);
              return { path: found };
            });
            build.onLoad({ filter: /.*/ }, (args) => ({
              contents: fs.readFileSync(args.path, "utf8"),
              loader: /\.json$/.test(args.path) ? "json" : /\.[cm]?ts$/.test(args.path) ? "ts" : "js",
              resolveDir: path.dirname(args.path),
            }));
          },
        },
      ],
    });
  } catch (error) {
    const first = (error as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors?.[0];
    if (!first) throw error;
    const where = first.location ? ` (${first.location.file}:${first.location.line})` : "";
    throw new CliError("invalid_component", `${first.text}${first.text.startsWith("cannot find") ? "" : where}`);
  }
  const manifest = importsPackages ? nearestManifest(path.dirname(entry)) : undefined;
  if (manifest) reached.add(manifest);
  if (reached.size > MAX_FILES)
    throw new CliError("invalid_component", `the component reaches ${reached.size} files; at most ${MAX_FILES} are uploaded`);
  const root = commonFolder([...reached]);
  const files: Record<string, string> = {};
  for (const file of reached) files[path.relative(root, file).split(path.sep).join("/")] = fs.readFileSync(file, "utf8");
  return { files, entry: path.relative(root, entry).split(path.sep).join("/") };
}

function commonFolder(files: string[]): string {
  let root = path.dirname(files[0]);
  for (const file of files) {
    for (;;) {
      const relative = path.relative(root, file);
      if (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative)) break;
      root = path.dirname(root);
    }
  }
  return root;
}

/** A path that looks like one (a separator, a leading dot, a code extension): never taken for a registry key. */
const looksLikePath = (target: string) => /[\\/]/.test(target) || target.startsWith(".") || KNOWN_EXTENSION.test(target);

/** What a deploy target is: uploaded files (a file or a directory's entry) or a registry key. */
export async function resolveTarget(target: string, entry?: string): Promise<{ code: ComponentCode; describe: string }> {
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(target);
  } catch {
    stat = undefined;
  }
  if (!stat) {
    if (looksLikePath(target)) throw usage(`no such file or directory: ${target}`);
    if (entry !== undefined) throw usage("--entry goes with a directory");
    return { code: { key: target }, describe: `registry component ${target}` };
  }
  const entryFile = stat.isDirectory() ? directoryEntry(target, entry) : target;
  if (!stat.isDirectory() && entry !== undefined) throw usage("--entry goes with a directory");
  const { files, entry: entryPath } = await collectFiles(entryFile);
  const count = Object.keys(files).length;
  return {
    code: { component_files: files, component_entry: entryPath },
    describe: `${path.relative(process.cwd(), path.resolve(entryFile)) || entryFile}${count > 1 ? ` and ${count - 1} imported file${count > 2 ? "s" : ""}` : ""}`,
  };
}
