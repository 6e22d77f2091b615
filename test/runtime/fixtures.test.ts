// The fixture corpus: every valid fixture prepares, every invalid one fails with exactly the
// problems expected.json lists.
import { expect } from "chai";
import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ComponentValidationError, prepareComponent, type Runtime } from "../../src/runtime/index.js";
import { FIXTURES, fixture, invocation, prepareFixture, serveDirectory, startRuntime } from "./support.js";

describe("runtime: component fixture corpus", function () {
  this.timeout(60_000);
  let runtime: Runtime;
  before(async () => {
    runtime = await startRuntime({ allowPrivateNetworks: true });
  });
  after(async () => runtime.close());

  it("prepares every valid fixture", async () => {
    const files = await fs.readdir(path.join(FIXTURES, "valid"));
    expect(files.length).to.be.greaterThan(8);
    for (const file of files) {
      const prepared = await prepareFixture(runtime, `valid/${file}`);
      expect(prepared.codeHash, file).to.match(/^[0-9a-f]{64}$/);
      expect(prepared.meta.name, file).to.be.a("string").and.not.equal("");
    }
  });

  it("gives configurable_props in the seed's shape for every source prop type", async () => {
    const prepared = await prepareFixture(runtime, "valid/all-prop-types.source.mjs");
    expect(prepared.meta).to.include({
      name: "All prop types",
      key: "weather_api-all-prop-types",
      version: "1.0.0",
      type: "source",
      dedupe: "unique",
      hasRun: true,
    });
    expect(prepared.configurableProps).to.deep.equal([
      { name: "weather", type: "app", app: "weather_api" },
      { name: "enabled", type: "boolean", label: "Enabled", default: true, optional: true },
      { name: "flags", type: "boolean[]", optional: true },
      { name: "limit", type: "integer", label: "Limit", default: 10, optional: true, min: 1, max: 50 },
      { name: "sizes", type: "integer[]", optional: true },
      { name: "token", type: "string", label: "Token", secret: true },
      {
        name: "unit",
        type: "string",
        default: "C",
        optional: true,
        options: [
          { label: "Celsius", value: "C" },
          { label: "Fahrenheit", value: "F" },
        ],
      },
      { name: "tags", type: "string[]", optional: true },
      { name: "extra", type: "object", optional: true },
      { name: "city", type: "string", label: "City", description: "Where to watch", optional: true, options: ["Oslo", "Lima"] },
      { name: "http", type: "$.interface.http", customResponse: true },
      { name: "timer", type: "$.interface.timer", default: { intervalSeconds: 300 } },
      { name: "db", type: "$.service.db" },
    ]);
    const city = prepared.meta.props.find((p) => p.name === "city");
    expect(city?.propDefinition).to.deep.equal({ app: "weather_api", name: "city" });
    expect(prepared.meta.props.find((p) => p.name === "http")?.customResponse).to.equal(true);
  });

  it("reads an action: any props, propDefinition with dynamic options, no dedupe or hooks", async () => {
    const prepared = await prepareFixture(runtime, "valid/all-prop-types.action.mjs");
    expect(prepared.meta.type).to.equal("action");
    expect(prepared.configurableProps).to.deep.equal([
      { name: "notes", type: "app", app: "notes" },
      { name: "folder", type: "string", label: "Folder", remoteOptions: true },
      { name: "payload", type: "any", label: "Payload" },
      { name: "count", type: "integer", default: 1, optional: true },
      { name: "db", type: "$.service.db" },
    ]);
    expect(prepared.meta.props.find((p) => p.name === "folder")?.options).to.equal("dynamic");
  });

  it("knows ESM from CommonJS and transpiles TypeScript", async () => {
    expect((await prepareFixture(runtime, "valid/commonjs.source.cjs")).moduleFormat).to.equal("cjs");
    expect((await prepareFixture(runtime, "valid/builtins.source.mjs")).moduleFormat).to.equal("esm");
    const ts = await prepareFixture(runtime, "valid/typescript.source.mts");
    expect(ts.meta).to.include({ name: "TypeScript source", version: "1.2.3" });
    const outcome = await runtime.invoke(invocation(ts, { event: { celsius: 100 }, props: { offset: 1 } }));
    expect(outcome.emits).to.deep.equal([{ event: { fahrenheit: 213 }, meta: { summary: "213 F" } }]);
  });

  it("expands shorthand props and a timer schedule written on the prop", async () => {
    const prepared = await prepareFixture(runtime, "valid/shorthand.source.mjs");
    expect(prepared.configurableProps).to.deep.equal([
      { name: "http", type: "$.interface.http" },
      { name: "db", type: "$.service.db" },
      { name: "secret", type: "string" },
      { name: "timer", type: "$.interface.timer", default: { intervalSeconds: 120 } },
    ]);
  });

  it("lets a timer-only source without run emit its timer event", async () => {
    const prepared = await prepareFixture(runtime, "valid/timer-only.source.mjs");
    expect(prepared.meta.hasRun).to.equal(false);
    const event = { timestamp: 1700000000, interval_seconds: 300 };
    const outcome = await runtime.invoke(invocation(prepared, { event }));
    expect(outcome.ok).to.equal(true);
    expect(outcome.emits).to.deep.equal([{ event, meta: {} }]);
  });

  it("bundles a multi-file component fetched relative to component_url", async () => {
    const server = await serveDirectory(path.join(FIXTURES, "multi"));
    try {
      const url = `${server.url}/sources/new-reading/new-reading.mjs`;
      const code = await fixture("multi/sources/new-reading/new-reading.mjs");
      const prepared = await prepareComponent({ code, url }, { runtime, allowPrivateNetworks: true });
      expect(prepared.modules).to.deep.equal([`${server.url}/sources/common/units.mjs`, `${server.url}/weather.app.mjs`]);
      expect(prepared.configurableProps).to.deep.equal([
        { name: "weather", type: "app", app: "weather_api" },
        { name: "city", type: "string", label: "City", description: "City to watch", default: "Oslo" },
        { name: "db", type: "$.service.db" },
      ]);
      const outcome = await runtime.invoke(invocation(prepared, { props: { weather: { $auth: { api_key: "k1" } } } }));
      expect(outcome.emits[0]?.event).to.deep.equal({ text: "Weather for Oslo (key k1)", unit: "Celsius" });
    } finally {
      await server.close();
    }
  });

  it("serves relative imports through a custom loader (modules on disk, as the registry keeps them)", async () => {
    const entry = path.join(FIXTURES, "multi/sources/new-reading/new-reading.mjs");
    const loaded: string[] = [];
    const prepared = await prepareComponent(
      { code: await fs.readFile(entry, "utf8"), url: pathToFileURL(entry).href },
      {
        runtime,
        loadModule: async (url) => {
          const file = fileURLToPath(url);
          if (!file.startsWith(path.join(FIXTURES, "multi"))) throw new Error("outside the component folder");
          loaded.push(path.relative(FIXTURES, file));
          return fs.readFile(file, "utf8");
        },
      },
    );
    expect(loaded.sort()).to.deep.equal(["multi/sources/common/units.mjs", "multi/weather.app.mjs"]);
    expect(prepared.meta.key).to.equal("weather_api-new-reading");
  });

  it("refuses relative imports without a component_url, and unreachable module URLs", async () => {
    const code = await fixture("multi/sources/new-reading/new-reading.mjs");
    const noUrl = await prepareComponent({ code }, { runtime }).catch((e: unknown) => e);
    expect(noUrl).to.be.instanceOf(ComponentValidationError);
    expect((noUrl as ComponentValidationError).problems[0].message).to.match(/needs a component_url/);
    // Loopback is private: without the opt-in the guarded client refuses it.
    const server = await serveDirectory(path.join(FIXTURES, "multi"));
    try {
      const guarded = await prepareComponent(
        { code, url: `${server.url}/sources/new-reading/new-reading.mjs` },
        { runtime, allowPrivateNetworks: false },
      ).catch((e: unknown) => e);
      expect(guarded).to.be.instanceOf(ComponentValidationError);
      expect((guarded as ComponentValidationError).problems[0].message).to.match(/refusing to connect to 127\.0\.0\.1/);
    } finally {
      await server.close();
    }
  });

  it("fails every invalid fixture with exactly the expected problem paths", async () => {
    const expected = JSON.parse(await fixture("invalid/expected.json")) as Record<string, string[]>;
    const files = (await fs.readdir(path.join(FIXTURES, "invalid"))).filter((f) => f !== "expected.json");
    expect(files.sort()).to.deep.equal(Object.keys(expected).sort());
    for (const file of files) {
      const err = await prepareFixture(runtime, `invalid/${file}`).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, file).to.be.instanceOf(ComponentValidationError);
      const problems = (err as ComponentValidationError).problems;
      expect(problems.map((p) => p.path).sort(), `${file}: ${JSON.stringify(problems)}`).to.deep.equal([...expected[file]].sort());
      for (const p of problems) expect(p.message, file).to.be.a("string").with.length.greaterThan(5);
    }
  });

  it("names the failure in clear words", async () => {
    const messages = async (file: string) =>
      ((await prepareFixture(runtime, `invalid/${file}`).catch((e: unknown) => e)) as ComponentValidationError).problems
        .map((p) => p.message)
        .join(" | ");
    expect(await messages("requires-child-process.cjs")).to.match(
      /imports the Node module "child_process", which is not available in the sandbox/,
    );
    expect(await messages("throws-on-load.mjs")).to.match(/threw while loading: SyntaxError/);
    expect(await messages("unknown-prop-type.mjs")).to.match(/unknown prop type "strin"/);
    expect(await messages("apphook-prop.mjs")).to.match(/^"\$\.interface\.apphook" props are not offered: .* at its HTTP endpoint/);
    expect(await messages("data-store-prop.mjs")).to.match(/^"data_store" props are not offered: .* this\.db \(\$\.service\.db\)/);
    expect(await messages("secret-on-integer.mjs")).to.match(/secret is only allowed on string props/);
    expect(await messages("any-in-source.mjs")).to.match(/any props are only allowed in actions/);
    expect(await messages("syntax-error.mjs")).to.match(/line 1/);
    expect(await messages("top-level-await.mjs")).to.equal(
      "top-level await is not supported in components (they are loaded synchronously): move the await into run, a hook or a method (line 3, column 16)",
    );
    expect(await messages("propdefinition-missing.mjs")).to.match(/app "demo" has no propDefinition "missing"/);
  });
});
