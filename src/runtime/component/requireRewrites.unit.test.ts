import { expect } from "chai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { requireRewrites } from "./bundle.js";

describe("requireRewrites: a package's own require from createRequire(import.meta.url)", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), "hw-require-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string): string => {
    const at = path.join(dir, name);
    writeFileSync(at, text);
    return at;
  };

  it("drops a declaration named require, so its calls are the free require esbuild bundles", async () => {
    const at = file(
      "a.js",
      `import { createRequire } from "module";\nconst require = createRequire(import.meta.url);\nexport const spec = require("@netlify/open-api");\n`,
    );
    const rewritten = await requireRewrites([at]);
    expect(rewritten.get(at)).to.equal(`import { createRequire } from "module";\n\nexport const spec = require("@netlify/open-api");\n`);
  });

  it("another name: calls with a literal specifier become require calls, other uses keep the name", async () => {
    const at = file(
      "b.mjs",
      `import m from "node:module";\nlet req = m.createRequire( import.meta.url )\nconst pkg = req('./package.json'), x = req(\`x\`);\nconst where = req.resolve("y"); prereq("z");\n`,
    );
    const rewritten = await requireRewrites([at]);
    expect(rewritten.get(at)).to.equal(
      `import m from "node:module";\nconst req = require;\nconst pkg = require('./package.json'), x = require(\`x\`);\nconst where = req.resolve("y"); prereq("z");\n`,
    );
  });

  it("leaves files that import module for anything else, and files it cannot read", async () => {
    const at = file("c.js", `import { builtinModules } from "module";\nexport default builtinModules.length;\n`);
    const rewritten = await requireRewrites([at, path.join(dir, "missing.js")]);
    expect(rewritten.size).to.equal(0);
  });
});
