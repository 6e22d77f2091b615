// Builds the prelude script (src/runtime/isolate/prelude.ts, compiled to dist) into one IIFE with
// its npm parts (buffer, events, web-streams-polyfill), once per host process. Whitespace is
// minified (names are kept, so stacks still read): every isolate holds the prelude's source, and
// its modules made on first use are most of it (docs/decisions.md, "Web globals").
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

let built: Promise<string> | undefined;

export function preludeSource(): Promise<string> {
  built ??= esbuild
    .build({
      entryPoints: [fileURLToPath(new URL("../isolate/prelude.js", import.meta.url))],
      bundle: true,
      write: false,
      format: "iife",
      platform: "browser",
      target: "es2022",
      legalComments: "none",
      minifyWhitespace: true,
      // Classes and functions keep their own names where bundling renamed them to avoid a clash
      // (Buffer was "Buffer7", URL "_URL"): libraries test `constructor.name === "Buffer"`.
      keepNames: true,
      logLevel: "silent",
      define: { global: "globalThis", __HW_NODE_VERSION__: JSON.stringify(process.version) },
    })
    .then((r) => r.outputFiles[0].text);
  return built;
}
