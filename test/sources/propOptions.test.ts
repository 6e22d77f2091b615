import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";

// Props' options for a component being configured (POST /v1/components/{key_or_id}/props/{prop}/options),
// against the real server: static lists, options() methods with page and prevContext, a
// propDefinition whose options() reads its app's $auth (inline or from a connected account) and
// the inputValues given from the configured props, failures and limits, and tenancy.

const COMPONENT = `
const crm = {
  type: "app",
  app: "crm",
  propDefinitions: {
    pipeline: {
      type: "string",
      label: "Pipeline",
      async options({ page, region }) {
        if (!this.$auth.api_key) throw new Error("connect a crm account first");
        return [{ label: "key " + this.$auth.api_key + " in " + (region ?? "nowhere") + " page " + page, value: "p-" + region }];
      },
    },
  },
  methods: { prefix() { return "crm:"; } },
};

export default {
  key: "options-demo",
  name: "Options demo",
  version: "0.1.0",
  props: {
    crm,
    region: { type: "string", options: ["eu", "us"] },
    color: { type: "string", options: ["red", { label: "Blue", value: "blue" }] },
    letter: {
      type: "string",
      async options({ page }) {
        return [["a", "b"], ["c"]][page] ?? [];
      },
    },
    cursor: {
      type: "string",
      async options({ prevContext }) {
        const n = prevContext?.nextPageToken ?? 0;
        return { options: [{ label: "item " + n + " of " + this.region, value: n }], context: n < 2 ? { nextPageToken: n + 1 } : {} };
      },
    },
    pipeline: { propDefinition: [crm, "pipeline", (c) => ({ region: c.region })] },
    boom: { type: "string", async options() { throw new Error("the list is not available"); } },
    loop: { type: "string", async options() { for (;;) {} } },
    odd: { type: "string", async options() { return 42; } },
    plain: { type: "string", optional: true },
  },
  async run() {},
};`;

describe("prop options (real server)", function () {
  this.timeout(120_000);
  let server: TestServer;
  let admin: ApiClient;
  let componentId: string;

  before(async () => {
    server = new TestServer({ env: { HEADWATER_RUN_TIMEOUT_MS: "1500" } });
    await server.start();
    admin = server.client();
    const saved = await admin.post("/v1/components", { component_code: COMPONENT });
    expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
    componentId = saved.body.data.id;
  });

  after(async () => {
    await server?.stop();
  });

  const options = (prop: string, body: Record<string, unknown> = {}, client = admin, component = componentId) =>
    client.post(`/v1/components/${component}/props/${prop}/options`, body);

  it("configurable_props says which props list their options remotely", async () => {
    const props = (await admin.get(`/v1/components/${componentId}`)).body.data.configurable_props as {
      name: string;
      remoteOptions?: boolean;
      options?: unknown[];
    }[];
    const byName = Object.fromEntries(props.map((p) => [p.name, p]));
    expect(byName.letter.remoteOptions).to.equal(true);
    expect(byName.pipeline.remoteOptions).to.equal(true);
    expect(byName.color.remoteOptions).to.equal(undefined);
    expect(byName.color.options).to.deep.equal(["red", { label: "Blue", value: "blue" }]);
  });

  it("a static list is answered as {label, value} without running anything", async () => {
    const r = await options("color");
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data).to.deep.equal({
      options: [
        { label: "red", value: "red" },
        { label: "Blue", value: "blue" },
      ],
      context: null,
    });
    // The same by key.
    expect((await options("color", {}, admin, "options-demo")).body.data.options).to.have.length(2);
  });

  it("options() pages by page number and by prevContext, and sees the props configured so far", async () => {
    const pages = [];
    for (let page = 0; page < 3; page++) pages.push((await options("letter", { page })).body.data);
    expect(pages.map((p) => p.options.map((o: { value: string }) => o.value))).to.deep.equal([["a", "b"], ["c"], []]);
    let context: unknown = null;
    const items: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await options("cursor", { configured_props: { region: "eu" }, prev_context: context });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      items.push(...r.body.data.options.map((o: { label: string }) => o.label));
      context = r.body.data.context;
    }
    expect(items).to.deep.equal(["item 0 of eu", "item 1 of eu", "item 2 of eu"]);
    expect(context).to.deep.equal({});
  });

  it("a propDefinition's options() runs as its app, with the app's $auth and the inputValues from the configured props", async () => {
    const inline = await options("pipeline", { configured_props: { crm: { $auth: { api_key: "k-inline" } }, region: "us" }, page: 1 });
    expect(inline.status, JSON.stringify(inline.body)).to.equal(200);
    expect(inline.body.data.options).to.deep.equal([{ label: "key k-inline in us page 1", value: "p-us" }]);
    const account = await admin.post("/v1/accounts", { app: "crm", name: "main", auth: { api_key: "k-account" } });
    expect(account.status, JSON.stringify(account.body)).to.equal(200);
    const bound = await options("pipeline", { configured_props: { crm: { authProvisionId: account.body.data.id }, region: "eu" } });
    expect(bound.body.data.options[0].label).to.equal("key k-account in eu page 0");
    const unconnected = await options("pipeline", { configured_props: { region: "eu" } });
    expect(unconnected.status).to.equal(400);
    expect(unconnected.body.error).to.include("connect a crm account first");
    const wrongValue = await options("pipeline", { configured_props: { region: "mars" } });
    expect(wrongValue.status).to.equal(400);
    expect(wrongValue.body.details[0].path).to.equal("body.configured_props.region");
  });

  it("a throwing or looping options() is a clear error, and the node keeps answering; bad answers and props are refused", async () => {
    const boom = await options("boom");
    expect(boom.status).to.equal(400);
    expect(boom.body).to.deep.include({ code: "hook_failed" });
    expect(boom.body.error).to.equal("the options() of boom failed: Error: the list is not available");
    const loop = await options("loop");
    expect(loop.status, JSON.stringify(loop.body)).to.equal(504);
    expect(loop.body.code).to.equal("run_timeout");
    expect((await options("color")).status, "the node still answers").to.equal(200);
    const odd = await options("odd");
    expect(odd.status).to.equal(400);
    expect(odd.body.error).to.include("options() must return an array of options, or { options, context }");
    expect((await options("plain")).status).to.equal(400);
    expect((await options("nosuchprop")).status).to.equal(404);
    expect((await options("letter", { page: -1 })).status).to.equal(400);
  });

  it("another user's component is not found, exactly like an unknown one", async () => {
    const other = server.cli("admin", "user", "create", "--username", "options-other", "--email", "oo@example.test").json;
    const theirs = server.client(other.api_key);
    const foreign = await options("color", {}, theirs);
    const unknown = await options("color", {}, theirs, "sc_doesnotexist00000");
    expect(foreign.status).to.equal(404);
    expect(foreign.body).to.deep.equal(unknown.body);
  });
});
