// Builds the prelude script (src/runtime/isolate/prelude.ts, compiled to dist) into one IIFE with
// its npm parts (buffer, events, web-streams-polyfill), once per host process. Whitespace is
// minified (names are kept, so stacks still read): every isolate holds the prelude's source, and
// its modules made on first use are most of it (docs/decisions.md, "Web globals").
import { fileURLToPath } from "node:url";
import { constants as nodeCryptoConstants } from "node:crypto";
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
      // Not `keepNames`: its `__name` calls run inside functions, after component code, with a
      // descriptor a poisoned Object.prototype breaks. The prelude restores the names of what it
      // exposes itself (ownName in prelude.ts).
      logLevel: "silent",
      define: {
        global: "globalThis",
        __HW_NODE_VERSION__: JSON.stringify(process.version),
        __HW_CRYPTO_CONSTANTS__: JSON.stringify(cryptoConstants()),
      },
    })
    .then((r) => r.outputFiles[0].text);
  return built;
}

/** The host Node's crypto.constants with plain values, for the sandbox's `crypto.constants`. */
function cryptoConstants(): Record<string, number | string> {
  const constants: Record<string, number | string> = {};
  for (const [name, value] of Object.entries(nodeCryptoConstants))
    if (typeof value === "number" || typeof value === "string") constants[name] = value;
  return constants;
}
