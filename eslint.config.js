// Lint: typescript-eslint's type-aware recommended rules, and the layering of the code base
// (docs/architecture.md): the domain (commands/, projections/) never imports the application,
// the roles or the adapters; ports and adapters never import the domain or the API.
import eslint from "@eslint/js";
import tseslint from "typescript-eslint";

/** Files matching `files` may not import module paths matching `regex` (relative paths, as written). */
const restrict = (files, regex, message) => ({
  files,
  rules: { "no-restricted-imports": ["error", { patterns: [{ regex, message }] }] },
});

export default tseslint.config(
  {
    ignores: ["dist/**", "node_modules/**", ".cache/**", "registry/**", "test/fixtures/**", "bench/results/**", "docs/**"],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      "@typescript-eslint/no-explicit-any": "error",
      // Fire-and-forget promises are marked with `void` where intended.
      "@typescript-eslint/no-floating-promises": "error",
      // A caught error is rethrown (or rejected with) as it came: it may be anything.
      "@typescript-eslint/only-throw-error": ["error", { allowThrowingAny: true, allowThrowingUnknown: true }],
      "@typescript-eslint/prefer-promise-reject-errors": ["error", { allowThrowingAny: true, allowThrowingUnknown: true }],
      // Interface implementations return promises without awaiting anything; that is fine.
      "@typescript-eslint/require-await": "off",
      "no-constant-condition": ["error", { checkLoops: false }],
      // Refusing control characters in names is exactly what some patterns are for.
      "no-control-regex": "off",
    },
  },
  {
    // Code that runs inside the isolate re-creates Node and web APIs over untrusted values: it
    // stringifies whatever it is given (as Node does), captures built-in methods before user code
    // can replace them, and throws what the platform throws.
    files: ["src/runtime/isolate/**/*.ts", "src/runtime/rules.ts"],
    rules: {
      "@typescript-eslint/no-base-to-string": "off",
      "@typescript-eslint/unbound-method": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/only-throw-error": "off",
      "@typescript-eslint/prefer-promise-reject-errors": "off",
      "preserve-caught-error": "off",
    },
  },
  {
    // Tests talk to servers and parse arbitrary JSON: `any` in their assertions is fine there.
    files: ["test/**/*.ts", "**/*.test.ts", "bench/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  { files: ["**/*.js", "**/*.mjs", "**/*.cjs"], ...tseslint.configs.disableTypeChecked },
  {
    // The dashboard: plain browser modules, no build step.
    files: ["src/ui/static/**/*.js"],
    languageOptions: {
      sourceType: "module",
      globals: Object.fromEntries(
        [
          "window",
          "document",
          "location",
          "history",
          "navigator",
          "fetch",
          "EventSource",
          "URLSearchParams",
          "Node",
          "setTimeout",
          "clearTimeout",
        ].map((name) => [name, "readonly"]),
      ),
    },
  },
  {
    // Plain Node scripts (bin/, scripts/): the Node globals they use.
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly" } },
  },
  restrict(
    ["commands/**/*.ts"],
    "(^|/)(src/(?!store/eventStore\\.js$|runtime/types\\.js$)|projections/)",
    "commands/ is the domain: it depends on nothing above it (only the event store port and the component format's types)",
  ),
  restrict(
    ["projections/**/*.ts"],
    "(^|/)src/(?!store/eventStore\\.js$|projector/projection\\.js$|readModels/statements\\.js$)",
    "projections/ write rows from events: they import the domain, never the application, the API or the roles",
  ),
  restrict(
    ["src/store/**/*.ts", "src/bus/**/*.ts", "src/net/**/*.ts", "src/json/**/*.ts", "src/runtime/**/*.ts", "src/destinations/**/*.ts"],
    "(^|/)(commands|projections)/|(^|\\.\\./)(api|runner|sources|components|scheduler|delivery|workflows|accounts|connectedAccounts)/",
    "ports and adapters know nothing of the domain or the application above them",
  ),
  restrict(
    ["src/readModels/**/*.ts"],
    "(^|\\.\\./)(api|runner|sources|scheduler|delivery|workflows)/",
    "read models are queries over projections: the roles use them, not the other way round",
  ),
);
