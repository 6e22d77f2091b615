import { expect } from "chai";
import { createHash } from "node:crypto";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver } from "../harness/receiver.js";

const code = (name: string, extra = "") => `export default {
  name: ${JSON.stringify(name)},
  key: "my-counter",
  version: "0.1.0",
  props: { http: "$.interface.http", count: { type: "integer", min: 1, max: 5, label: "Count" }, token: { type: "string", secret: true } },
  async run(event) { this.$emit(event.body); ${extra} },
};`;

describe("components API (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" } });
  const files = new Receiver();
  let admin: ApiClient;
  let other: ApiClient;

  before(async () => {
    await Promise.all([server.start(), files.start()]);
    admin = server.client();
    other = server.client(server.cli("admin", "user", "create", "--username", "other", "--email", "o@example.com").json.api_key);
  });
  after(async () => {
    await server.stop();
    await files.stop();
  });

  it("saves code and answers the seed's component fields", async () => {
    const source = code("Counter");
    const r = await admin.post("/v1/components", { component_code: source });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const c = r.body.data;
    expect(c.id).to.match(/^sc_/);
    expect(c).to.include({ code: source, name: "Counter", version: "0.1.0", key: "my-counter" });
    expect(c.code_hash).to.equal(createHash("sha256").update(source).digest("hex"));
    expect(c.created_at).to.be.a("number");
    expect(c.configurable_props.map((p: { name: string }) => p.name)).to.deep.equal(["http", "count", "token"]);
    expect(c.configurable_props[1]).to.deep.include({ name: "count", type: "integer", min: 1, max: 5, label: "Count" });
    expect(c.configurable_props[2]).to.deep.include({ name: "token", type: "string", secret: true });

    expect((await admin.get(`/v1/components/${c.id}`)).body.data).to.deep.equal(c);
    expect((await admin.get("/v1/components/my-counter")).body.data.id).to.equal(c.id);
    const again = await admin.post("/v1/components", { component_code: source });
    expect(again.body.data.id, "the same code saved twice is one component").to.equal(c.id);
  });

  it("a second save under the same key becomes the key's target; the old id keeps working", async () => {
    const first = (await admin.post("/v1/components", { component_code: code("Counter v1", "/* v1 */") })).body.data;
    const second = (await admin.post("/v1/components", { component_code: code("Counter v2", "/* v2 */") })).body.data;
    expect(second.id).to.not.equal(first.id);
    expect((await admin.get("/v1/components/my-counter")).body.data.id).to.equal(second.id);
    expect((await admin.get(`/v1/components/${first.id}`)).body.data.name).to.equal("Counter v1");
  });

  it("another user's component is a 404, by id and by key", async () => {
    const mine = (await admin.post("/v1/components", { component_code: code("Private") })).body.data;
    const byId = await other.get(`/v1/components/${mine.id}`);
    expect(byId.status).to.equal(404);
    expect((await other.get("/v1/components/my-counter")).status).to.equal(404);
    expect(byId.body).to.deep.equal((await other.get("/v1/components/sc_doesnotexist00")).body);
  });

  it("fetches component_url (relative imports too); code wins over url when both are given", async () => {
    files.files.set("/lib/app.mjs", { body: `export default { type: "app", app: "demo", methods: { greet() { return "hi"; } } };` });
    files.files.set("/lib/source.mjs", {
      body: `import app from "./app.mjs";
export default { name: "From URL", version: "1.2.3", props: { app, http: "$.interface.http" }, async run() { this.$emit(this.app.greet()); } };`,
    });
    const r = await admin.post("/v1/components", { component_url: `${files.url}/lib/source.mjs` });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data).to.include({ name: "From URL", version: "1.2.3" });
    const both = await admin.post("/v1/components", { component_code: code("Given code"), component_url: `${files.url}/lib/source.mjs` });
    expect(both.body.data.name).to.equal("Given code");
  });

  it("resolves relative imports as Node does: without an extension, to .js/.mjs/.cjs/.ts, and to a directory's index file", async () => {
    files.files.set("/pkg/http.app.mjs", { body: `export default { type: "app", app: "http", methods: { hello() { return "app"; } } };` });
    files.files.set("/pkg/common/index.js", { body: `module.exports = { common: () => "common" };` });
    files.files.set("/pkg/util.ts", { body: `export const twice = (n: number): number => n * 2;` });
    files.files.set("/pkg/sources/new/new.mjs", {
      body: `import app from "../../http.app";
import { common } from "../../common";
import { twice } from "../../util";
export default { name: "Resolved", version: "1.0.0", props: { app, http: "$.interface.http" },
  async run() { this.$emit([this.app.hello(), common(), twice(21)]); } };`,
    });
    // Like a real file server, unknown paths are 404s (each candidate is tried in turn).
    files.status = 404;
    try {
      const r = await admin.post("/v1/components", { component_url: `${files.url}/pkg/sources/new/new.mjs` });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body.data.name).to.equal("Resolved");
    } finally {
      files.status = 200;
    }
    files.status = 404;
    const missing = await admin.post("/v1/components", {
      component_code: `import x from "./nowhere"; export default x;`,
      component_url: `${files.url}/pkg/a.mjs`,
    });
    files.status = 200;
    expect(missing.status).to.equal(400);
    expect(missing.body.details[0].message).to.match(/cannot find the module "\.\/nowhere"/);
  });

  it("saves an uploaded multi-file component (component_files and component_entry), resolving its imports among the files", async () => {
    const uploaded = {
      "widget.app.mjs": `export default { type: "app", app: "widget", propDefinitions: { size: { type: "integer", label: "Size" } }, methods: { name() { return "widget"; } } };`,
      "common/base.js": `module.exports = { props: { http: { type: "$.interface.http" } }, methods: { tag(x) { return "<" + x + ">"; } } };`,
      "sources/new-widget/index.ts": `import widget from "../../widget.app";
import base from "../../common/base";
export default { ...base, key: "widget-new-widget", name: "New widget", version: "0.2.0",
  props: { ...base.props, widget, size: { propDefinition: [widget, "size"] } },
  methods: { ...base.methods },
  async run(event: { body: unknown }) { this.$emit({ tag: this.tag(this.widget.name()), size: this.size, body: event.body }); } };`,
    };
    const r = await admin.post("/v1/components", { component_files: uploaded, component_entry: "sources/new-widget/index.ts" });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data).to.include({
      name: "New widget",
      version: "0.2.0",
      key: "widget-new-widget",
      code: uploaded["sources/new-widget/index.ts"],
    });
    expect(r.body.data.configurable_props.map((p: { name: string }) => p.name)).to.include.members(["http", "widget", "size"]);
    const again = await admin.post("/v1/components", { component_files: uploaded, component_entry: "sources/new-widget/index.ts" });
    expect(again.body.data.id, "the same files are the same component").to.equal(r.body.data.id);
    const changed = await admin.post("/v1/components", {
      component_files: { ...uploaded, "common/base.js": uploaded["common/base.js"].replace("<", "[") },
      component_entry: "sources/new-widget/index.ts",
    });
    expect(changed.body.data.id, "a changed helper is new code").to.not.equal(r.body.data.id);
    const source = await admin.post("/v1/sources", { component_id: r.body.data.id, configured_props: { widget: { $auth: {} }, size: 3 } });
    expect(source.status, JSON.stringify(source.body)).to.equal(200);
    const run = await admin.post(`/v1/sources/${source.body.data.id}/run`, { event: { body: "hi" } });
    expect(run.body.data.ok, JSON.stringify(run.body)).to.equal(true);
    const events = await admin.get(`/v1/sources/${source.body.data.id}/event_summaries?expand=event`);
    expect(events.body.data[0].event).to.deep.equal({ tag: "<widget>", size: 3, body: "hi" });
  });

  it("deploys and updates a source from uploaded files (component_files on POST and PUT /v1/sources)", async () => {
    const files = (greeting: string) => ({
      "lib/greet.js": `export const greet = (x) => ${JSON.stringify(greeting)} + x;`,
      "src/source.mjs": `import { greet } from "../lib/greet";
export default { name: "Uploaded greeter", version: "0.0.1", props: { who: { type: "string" } },
  async run() { this.$emit({ said: greet(this.who) }); } };`,
    });
    const created = await admin.post("/v1/sources", {
      component_files: files("hello "),
      component_entry: "src/source.mjs",
      configured_props: { who: "ann" },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.data.id as string;
    expect((await admin.post(`/v1/sources/${id}/run`, {})).body.data.ok).to.equal(true);
    const updated = await admin.put(`/v1/sources/${id}`, { component_files: files("bye "), component_entry: "src/source.mjs" });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(200);
    expect(updated.body.data.component_id).to.not.equal(created.body.data.component_id);
    expect((await admin.post(`/v1/sources/${id}/run`, {})).body.data.ok).to.equal(true);
    const events = await admin.get(`/v1/sources/${id}/event_summaries?expand=event`);
    expect(events.body.data.map((e: any) => e.event.said)).to.deep.equal(["bye ann", "hello ann"]);
    const noEntry = await admin.post("/v1/sources", { component_files: files("x") });
    expect(noEntry.status).to.equal(400);
    expect(noEntry.body.details[0].path).to.equal("body.component_entry");
  });

  it("a PUT without configured_props (pause, resume, rename) keeps sealed secret and app props", async () => {
    const created = await admin.post("/v1/sources", {
      component_code: code("Sealed keeper").replace('key: "my-counter"', 'key: "sealed-keeper"'),
      configured_props: { count: 2, token: "s3cret" },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.data.id as string;
    const paused = await admin.put(`/v1/sources/${id}`, { active: false });
    expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
    expect(paused.body.data).to.include({ active: false });
    const renamed = await admin.put(`/v1/sources/${id}`, { name: "Sealed keeper two" });
    expect(renamed.status, JSON.stringify(renamed.body)).to.equal(200);
    expect(renamed.body.data.configured_props).to.deep.include({ count: 2, token: "[redacted]" });
  });

  it("refuses uploads whose entry is missing, whose paths climb out, or that import outside their files", async () => {
    const bad = [
      { component_files: { "a.js": "export default {}" }, component_entry: "b.js" },
      { component_files: { "../a.js": "export default {}" }, component_entry: "../a.js" },
      { component_files: { "/abs.js": "export default {}" }, component_entry: "/abs.js" },
      { component_files: { "a.js": "export default {}" } },
      { component_files: { "a.js": `import x from "./b"; export default x;` }, component_entry: "a.js" },
    ];
    for (const body of bad) {
      const r = await admin.post("/v1/components", body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
    }
  });

  it("answers 400 listing every problem of invalid code, with paths", async () => {
    const r = await admin.post("/v1/components", {
      component_code: `export default {
        version: "1",
        props: { a: { type: "wat" }, b: { type: "object[]" }, c: { type: "string", min: 3 }, d: { type: "integer", secret: true } },
        dedupe: "sometimes",
        async run() {},
      };`,
    });
    expect(r.status).to.equal(400);
    expect(r.body.code).to.equal("invalid_component");
    const paths = r.body.details.map((d: { path: string }) => d.path);
    for (const p of [
      "component.name",
      "component.props.a.type",
      "component.props.b.type",
      "component.props.c.min",
      "component.props.d.secret",
      "component.dedupe",
    ]) {
      expect(paths, p).to.include(p);
    }
  });

  it("a component that throws on load is a 400, and so is a bad url", async () => {
    const throws = await admin.post("/v1/components", { component_code: `throw new Error("nope on load");` });
    expect(throws.status).to.equal(400);
    expect(throws.body.details[0].message).to.match(/nope on load/);
    const missing = await admin.post("/v1/components", { component_url: "http://127.0.0.1:1/not-there.mjs" });
    expect(missing.status).to.equal(400);
    expect(missing.body.code).to.equal("component_url_unreachable");
    const neither = await admin.post("/v1/components", {});
    expect(neither.status).to.equal(400);
    const ftp = await admin.post("/v1/components", { component_url: "ftp://example.com/x.mjs" });
    expect(ftp.status).to.equal(400);
    expect(ftp.body.details[0].path).to.equal("body.component_url");
  });

  it("accepts components written in TypeScript", async () => {
    const r = await admin.post("/v1/components", {
      component_code: `interface Payload { n: number }
export default { name: "Typed", version: "0.0.1", props: { http: "$.interface.http" },
  async run(event: { body: Payload }) { const p: Payload = event.body; this.$emit(p.n * 2); } };`,
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data.name).to.equal("Typed");
  });

  it("serves registry components by key, published with semantic versions", async () => {
    const r = await other.get("/v1/components/registry/http-new-requests");
    expect(r.status).to.equal(200);
    expect(r.body.data).to.include({ key: "http-new-requests", name: "New Requests" });
    expect(r.body.data.version).to.match(/^\d+\.\d+\.\d+$/);
    for (const key of [
      "http-new-requests-custom-response",
      "http-new-requests-payload-only",
      "schedule-every-interval",
      "schedule-cron",
      "http-poll-json-url",
      "helper_functions-format-json",
    ]) {
      expect((await other.get(`/v1/components/registry/${key}`)).status, key).to.equal(200);
    }
    expect((await other.get("/v1/components/registry/nope-nope")).status).to.equal(404);
  });

  it("admin registry publish adds a component; republishing the same version is refused or a no-op", async () => {
    const file = `${server.dataDir}/extra.mjs`;
    const body = `export default { key: "demo_app-hello", name: "Hello", version: "2.0.0", props: { http: "$.interface.http" }, async run() { this.$emit("hello"); } };`;
    (await import("node:fs")).writeFileSync(file, body);
    const published = server.cli("admin", "registry", "publish", file);
    expect(published.status, published.stderr).to.equal(0);
    expect(published.json).to.include({ key: "demo_app-hello", version: "2.0.0", published: true });
    expect((await admin.get("/v1/components/registry/demo_app-hello")).body.data.version).to.equal("2.0.0");
    expect(server.cli("admin", "registry", "publish", file).json.published).to.equal(false);
    (await import("node:fs")).writeFileSync(file, body.replace(`"hello"`, `"changed"`));
    const conflict = server.cli("admin", "registry", "publish", file);
    expect(conflict.status).to.equal(1);
    expect(conflict.json.code).to.equal("name_taken");
  });
});

describe("components API: private addresses are refused by default", function () {
  this.timeout(60_000);
  it("component_url on loopback is a 400 unless the operator allows private networks", async () => {
    const server = new TestServer();
    const files = new Receiver();
    await Promise.all([server.start(), files.start()]);
    files.files.set("/c.mjs", { body: `export default { name: "x", version: "1", props: { http: "$.interface.http" }, async run() {} };` });
    try {
      const r = await server.client().post("/v1/components", { component_url: `${files.url}/c.mjs` });
      expect(r.status).to.equal(400);
      expect(r.body.error).to.match(/private|loopback|blocked|refused/i);
      expect(files.received, "the request never left").to.have.length(0);
    } finally {
      await server.stop();
      await files.stop();
    }
  });
});
