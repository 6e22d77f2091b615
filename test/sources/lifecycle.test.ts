import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver, eventually } from "../harness/receiver.js";
import { sleep } from "./sourcesSupport.js";

// A component whose hooks leave traces: events for deploy/activate, a call to a receiver for deactivate.
const hooked = (label: string) => `export default {
  name: "Hooked Source",
  version: "0.1.0",
  props: {
    http: "$.interface.http",
    db: "$.service.db",
    notify: { type: "string" },
    label: { type: "string", optional: true, default: ${JSON.stringify(label)} },
    token: { type: "string", secret: true, optional: true },
  },
  hooks: {
    async deploy() { this.db.set("deploys", (this.db.get("deploys") ?? 0) + 1); this.$emit({ hook: "deploy" }); },
    async activate() { this.db.set("activations", (this.db.get("activations") ?? 0) + 1); this.$emit({ hook: "activate", label: this.label }); },
    async deactivate() {
      await fetch(this.notify, { method: "POST", body: JSON.stringify({ hook: "deactivate", label: this.label }) });
    },
  },
  async run(event) {
    this.$emit({ body: event.body, deploys: this.db.get("deploys"), activations: this.db.get("activations"), label: this.label, token: this.token });
  },
};`;

async function events(client: ApiClient, id: string): Promise<any[]> {
  return (await client.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event`)).body.data;
}

describe("sources: deploy and lifecycle (real server)", function () {
  this.timeout(90_000);
  const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" } });
  const receiver = new Receiver();
  let admin: ApiClient;

  before(async () => {
    await Promise.all([server.start(), receiver.start()]);
    admin = server.client();
  });
  after(async () => {
    await server.stop();
    await receiver.stop();
  });

  it("deploys from code: deploy then activate hooks run, the answer has the seed's fields", async () => {
    const r = await admin.post("/v1/sources", {
      component_code: hooked("one"),
      name: "My Hooked",
      configured_props: { notify: `${receiver.url}/hooks`, token: "s3cret-value" },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const s = r.body.data;
    expect(s.id).to.match(/^dc_/);
    expect(s).to.include({ name: "My Hooked", name_slug: "my-hooked", active: true });
    expect(s.user_id).to.match(/^u_/);
    expect(s.component_id).to.match(/^sc_/);
    expect(s.configured_props.http.endpoint_url).to.match(new RegExp(`^${server.url}/e/[0-9a-z]{24}$`));
    expect(s.configured_props.token, "secrets are never echoed").to.equal("[redacted]");
    expect(JSON.stringify(r.body)).to.not.include("s3cret-value");
    const hooks = (await events(admin, s.id)).map((e) => e.event.hook).reverse();
    expect(hooks).to.deep.equal(["deploy", "activate"]);

    // The run sees what the hooks stored, and the secret in clear.
    await fetch(s.configured_props.http.endpoint_url, { method: "POST", headers: { "content-type": "application/json" }, body: '{"n":1}' });
    const run = await eventually(async () => (await events(admin, s.id)).find((e) => e.event.body), 10_000, "the run's event");
    expect(run.event).to.deep.equal({ body: { n: 1 }, deploys: 1, activations: 1, label: "one", token: "s3cret-value" });

    const listed = (await admin.get("/v1/users/me/sources")).body.data.find((x: { id: string }) => x.id === s.id);
    const { user_id: _user, ...withoutUser } = s;
    expect(listed).to.deep.equal(withoutUser);
  });

  it("name_slug is unique per owner and auto-incremented; name defaults to the component's name slug", async () => {
    const slugs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await admin.post("/v1/sources", { component_code: hooked("x"), configured_props: { notify: `${receiver.url}/n` } });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body.data.name).to.equal("hooked-source");
      slugs.push(r.body.data.name_slug);
    }
    expect(slugs).to.deep.equal(["hooked-source", "hooked-source-1", "hooked-source-2"]);
  });

  it("deploys by component_id, from a component_url and from a registry key", async () => {
    const saved = (await admin.post("/v1/components", { component_code: hooked("by-id") })).body.data;
    const byId = await admin.post("/v1/sources", { component_id: saved.id, configured_props: { notify: "http://x.test/" } });
    expect(byId.status, JSON.stringify(byId.body)).to.equal(200);
    expect(byId.body.data.component_id).to.equal(saved.id);

    receiver.files.set("/hooked.mjs", { body: hooked("by-url") });
    const byUrl = await admin.post("/v1/sources", {
      component_url: `${receiver.url}/hooked.mjs`,
      configured_props: { notify: "http://x.test/" },
    });
    expect(byUrl.status, JSON.stringify(byUrl.body)).to.equal(200);
    expect((await admin.get(`/v1/components/${byUrl.body.data.component_id}`)).body.data.code).to.equal(hooked("by-url"));

    const byKey = await admin.post("/v1/sources", { key: "http-new-requests-payload-only" });
    expect(byKey.status, JSON.stringify(byKey.body)).to.equal(200);
    const registry = (await admin.get("/v1/components/registry/http-new-requests-payload-only")).body.data;
    expect(byKey.body.data.component_id).to.equal(registry.id);
    expect(byKey.body.data.name_slug).to.equal("new-requests-payload-only");
  });

  it("checks configured_props and lists each problem; nothing is created", async () => {
    const before = (await admin.get("/v1/users/me/sources")).body.page_info.total_count;
    const r = await admin.post("/v1/sources", {
      component_code: `export default { name: "Typed props", version: "1", props: {
        count: { type: "integer", min: 1, max: 3 }, tags: { type: "string[]" }, mode: { type: "string", options: ["a", "b"] },
        timer: { type: "$.interface.timer" } }, async run() {} };`,
      configured_props: { count: 9, tags: "nope", mode: "c", extra: true, timer: { intervalSeconds: 1 } },
    });
    expect(r.status).to.equal(400);
    expect(r.body.details.map((d: { path: string }) => d.path)).to.have.members([
      "configured_props.count",
      "configured_props.tags",
      "configured_props.mode",
      "configured_props.extra",
      "configured_props.timer.intervalSeconds",
    ]);
    const missing = await admin.post("/v1/sources", { component_code: hooked("m") });
    expect(missing.status).to.equal(400);
    expect(missing.body.details[0]).to.deep.equal({ path: "configured_props.notify", message: "is required" });
    const big = await admin.post("/v1/sources", { component_code: hooked("m"), configured_props: { notify: "x".repeat(70_000) } });
    expect(big.status).to.equal(400);
    expect((await admin.get("/v1/users/me/sources")).body.page_info.total_count).to.equal(before);
  });

  it("withLabel props: the component gets { label, value }, configured as that, as { __lv: … } or as the value alone", async () => {
    const component_code = `export default { name: "Labelled", version: "1", props: {
      subreddit: { type: "string", withLabel: true },
      sort: { type: "string", withLabel: true, options: [{ label: "Newest first", value: "new" }, { label: "Top", value: "top" }], default: "new" },
      limits: { type: "integer[]", withLabel: true, optional: true },
    }, async run() { this.$emit({ subreddit: this.subreddit, sort: this.sort, limits: this.limits, value: this.subreddit.value }); } };`;
    const deploy = async (configured_props: Record<string, unknown>) => admin.post("/v1/sources", { component_code, configured_props });
    const emitted = async (id: string) => {
      const run = await admin.post(`/v1/sources/${id}/run`, {});
      expect(run.status, JSON.stringify(run.body)).to.equal(200);
      return (await events(admin, id))[0].event;
    };

    const given = await deploy({ subreddit: { label: "Node.js", value: "node" }, limits: [{ __lv: { label: "ten", value: 10 } }, 20] });
    expect(given.status, JSON.stringify(given.body)).to.equal(200);
    expect(given.body.data.configured_props.subreddit).to.deep.equal({ label: "Node.js", value: "node" });
    expect(await emitted(given.body.data.id)).to.deep.equal({
      subreddit: { label: "Node.js", value: "node" },
      sort: { label: "Newest first", value: "new" },
      limits: [
        { label: "ten", value: 10 },
        { label: "20", value: 20 },
      ],
      value: "node",
    });

    const plain = await deploy({ subreddit: "javascript", sort: "top" });
    expect(plain.status, JSON.stringify(plain.body)).to.equal(200);
    expect(await emitted(plain.body.data.id)).to.deep.include({
      subreddit: { label: "javascript", value: "javascript" },
      sort: { label: "Top", value: "top" },
      value: "javascript",
    });

    const bad = await deploy({ subreddit: { label: 7, value: "x" }, sort: { label: "Old", value: "old" }, limits: [{ value: "ten" }] });
    expect(bad.status).to.equal(400);
    expect(bad.body.details).to.deep.equal([
      { path: "configured_props.subreddit.label", message: "must be a string" },
      { path: "configured_props.sort", message: 'must be one of ["new","top"]' },
      { path: "configured_props.limits[0]", message: "must be an integer" },
    ]);
    const listed = (await admin.get(`/v1/sources/${plain.body.data.id}`)).body.data;
    const component = (await admin.get(`/v1/components/${listed.component_id}`)).body.data;
    expect(component.configurable_props.find((p: { name: string }) => p.name === "sort")).to.include({ withLabel: true });
  });

  it("a request to the endpoint while a hook runs is run beside it (a webhook handshake), at deploy and at update; what it emits is not kept", async () => {
    // As Asana's API does: creating the webhook posts X-Hook-Secret to the endpoint and answers only once it is echoed.
    const component_code = `export default { name: "Handshaking", version: "1", props: {
      http: { type: "$.interface.http", customResponse: true }, db: "$.service.db", label: { type: "string" } },
      hooks: { async activate() {
        const r = await fetch(this.http.endpoint + "/hooks", { method: "POST", headers: { "x-hook-secret": "s3cr3t-" + this.label }, body: "{}" });
        this.db.set("handshake", { status: r.status, secret: r.headers.get("x-hook-secret"), label: this.label });
      } },
      async run(event) {
        const secret = event.headers["x-hook-secret"];
        if (secret) { this.$emit({ handshake: secret }); this.http.respond({ status: 200, headers: { "x-hook-secret": secret } }); return; }
        this.http.respond({ status: 200, body: "ok" });
        this.$emit({ body: event.body, handshake: this.db.get("handshake") });
      } };`;
    const started = Date.now();
    const deployed = await admin.post("/v1/sources", { component_code, configured_props: { label: "one" } });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const { id } = deployed.body.data;
    const url = deployed.body.data.configured_props.http.endpoint_url;
    const post = async (body: unknown) => {
      const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(r.status).to.equal(200);
    };
    await post({ n: 1 });
    const updated = await admin.put(`/v1/sources/${id}`, { configured_props: { label: "two" } });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(200);
    await post({ n: 2 });
    // Queued behind the hook, the handshake would have waited for the hook's fetch to time out (30 s).
    expect(Date.now() - started).to.be.below(25_000);
    const emitted = (await events(admin, id)).map((e) => e.event).reverse();
    expect(emitted).to.deep.equal([
      { body: { n: 1 }, handshake: { status: 200, secret: "s3cr3t-one", label: "one" } },
      { body: { n: 2 }, handshake: { status: 200, secret: "s3cr3t-two", label: "two" } },
    ]);
  });

  it("timer props are returned as {cron, interval_seconds, timezone}; a cron may name its IANA time zone", async () => {
    const r = await admin.post("/v1/sources", { key: "schedule-cron", configured_props: { timer: { cron: "*/5 * * * *" } } });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data.configured_props.timer).to.deep.equal({ cron: "*/5 * * * *", interval_seconds: 300, timezone: "UTC" });
    const i = await admin.post("/v1/sources", { key: "schedule-every-interval" });
    expect(i.body.data.configured_props.timer).to.deep.equal({ cron: null, interval_seconds: 900, timezone: null });
    const zoned = await admin.post("/v1/sources", {
      key: "schedule-cron",
      configured_props: { timer: { cron: "0 9 * * 1-5", timezone: "Europe/Paris" } },
    });
    expect(zoned.status, JSON.stringify(zoned.body)).to.equal(200);
    expect(zoned.body.data.configured_props.timer).to.deep.include({ cron: "0 9 * * 1-5", timezone: "Europe/Paris" });
    const moved = await admin.put(`/v1/sources/${zoned.body.data.id}`, {
      configured_props: { timer: { cron: "0 9 * * 1-5", timezone: "Asia/Tokyo" } },
    });
    expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
    expect((await admin.get(`/v1/sources/${zoned.body.data.id}`)).body.data.configured_props.timer.timezone).to.equal("Asia/Tokyo");
    for (const [timer, where] of [
      [{ cron: "0 9 * * *", timezone: "Mars/Olympus_Mons" }, "configured_props.timer.timezone"],
      [{ cron: "0 9 * * *", timezone: 5 }, "configured_props.timer.timezone"],
      [{ intervalSeconds: 900, timezone: "Europe/Paris" }, "configured_props.timer.timezone"],
    ] as const) {
      const bad = await admin.post("/v1/sources", { key: "schedule-cron", configured_props: { timer } });
      expect(bad.status, JSON.stringify(timer)).to.equal(400);
      expect(bad.body.details[0].path, JSON.stringify(timer)).to.equal(where);
    }
  });

  it("a hook that throws fails the request with a 400 carrying its message, and leaves nothing", async () => {
    const before = (await admin.get("/v1/users/me/sources")).body.page_info.total_count;
    const r = await admin.post("/v1/sources", {
      name: "Broken hook",
      component_code: `export default { name: "Throws", version: "1", props: { http: "$.interface.http" },
        hooks: { async activate() { throw new Error("cannot register the webhook"); } }, async run() {} };`,
    });
    expect(r.status).to.equal(400);
    expect(r.body.code).to.equal("hook_failed");
    expect(r.body.error).to.include("cannot register the webhook");
    expect((await admin.get("/v1/users/me/sources")).body.page_info.total_count).to.equal(before);
    // Its name was not taken either.
    const again = await admin.post("/v1/sources", { name: "Broken hook", key: "http-new-requests" });
    expect(again.body.data.name_slug).to.equal("broken-hook");
  });

  it("PUT: deactivate, replace code/props/name, activate; the id stays; the secret sent back redacted is kept", async () => {
    const created = (
      await admin.post("/v1/sources", {
        component_code: hooked("old"),
        name: "Updatable",
        configured_props: { notify: `${receiver.url}/put`, token: "tok-1" },
      })
    ).body.data;
    const r = await admin.put(`/v1/sources/${created.id}`, {
      component_code: hooked("new"),
      name: "Renamed Source",
      configured_props: { notify: `${receiver.url}/put`, label: "relabelled", token: "[redacted]" },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data).to.include({ id: created.id, name: "Renamed Source", name_slug: "renamed-source", active: true });
    expect(r.body.data.component_id).to.not.equal(created.component_id);
    expect(r.body.data.configured_props.http.endpoint_url).to.equal(created.configured_props.http.endpoint_url);
    const deactivated = await receiver.waitFor((x) => x.path === "/put");
    expect(JSON.parse(deactivated[0].body)).to.deep.equal({ hook: "deactivate", label: "old" });
    const activations = (await events(admin, created.id)).filter((e) => e.event.hook === "activate").map((e) => e.event.label);
    expect(activations).to.have.members(["old", "relabelled"]);

    await fetch(created.configured_props.http.endpoint_url, { method: "POST", body: "x" });
    const run = await eventually(async () => (await events(admin, created.id)).find((e) => e.event.body === "x"), 10_000, "run");
    expect(run.event).to.include({ activations: 2, deploys: 1, label: "relabelled", token: "tok-1" });
  });

  it("active:false pauses (endpoint 404), active:true resumes", async () => {
    const s = (await admin.post("/v1/sources", { key: "http-new-requests-payload-only", name: "Pausable" })).body.data;
    const url = s.configured_props.http.endpoint_url;
    expect((await fetch(url, { method: "POST", body: "1" })).status).to.equal(200);
    const paused = await admin.put(`/v1/sources/${s.id}`, { active: false });
    expect(paused.body.data.active).to.equal(false);
    expect((await fetch(url, { method: "POST", body: "2" })).status).to.equal(404);
    const resumed = await admin.put(`/v1/sources/${s.id}`, { active: true });
    expect(resumed.body.data.active).to.equal(true);
    expect((await fetch(url, { method: "POST", body: "3" })).status).to.equal(200);
    const bodies = await eventually(
      async () => {
        const list = (await events(admin, s.id)).map((e) => e.event);
        return list.length >= 2 ? list : undefined;
      },
      10_000,
      "two events",
    );
    expect(bodies.sort()).to.deep.equal(["1", "3"]);
  });

  it("DELETE runs deactivate, then the source, its events, endpoint and name are gone (404 after)", async () => {
    const s = (
      await admin.post("/v1/sources", {
        component_code: hooked("bye"),
        name: "Doomed",
        configured_props: { notify: `${receiver.url}/delete` },
      })
    ).body.data;
    const r = await admin.delete(`/v1/sources/${s.id}`);
    expect(r.status).to.equal(204);
    expect(JSON.parse((await receiver.waitFor((x) => x.path === "/delete"))[0].body)).to.deep.equal({ hook: "deactivate", label: "bye" });
    expect((await admin.get(`/v1/sources/${s.id}`)).status).to.equal(404);
    expect((await admin.get(`/v1/sources/${s.id}/event_summaries`)).status).to.equal(404);
    expect((await admin.delete(`/v1/sources/${s.id}`)).status).to.equal(404);
    expect((await admin.put(`/v1/sources/${s.id}`, { active: true })).status).to.equal(404);
    expect((await fetch(s.configured_props.http.endpoint_url, { method: "POST" })).status).to.equal(404);
    const audit = server.cli("audit", s.id);
    expect(audit.json.events.map((e: { type: string }) => e.type)).to.deep.equal(["SourceDeployed", "SourceDeleted"]);
    const reused = await admin.post("/v1/sources", { key: "http-new-requests", name: "Doomed" });
    expect(reused.body.data.name_slug, "the slug was released").to.equal("doomed");
  });

  it("a deactivate hook that throws blocks DELETE with a 400 unless force=true", async () => {
    const s = (
      await admin.post("/v1/sources", {
        component_code: `export default { name: "Sticky", version: "1", props: { http: "$.interface.http" },
        hooks: { async deactivate() { throw new Error("still registered upstream"); } }, async run() {} };`,
      })
    ).body.data;
    const refused = await admin.delete(`/v1/sources/${s.id}`);
    expect(refused.status).to.equal(400);
    expect(refused.body.error).to.include("still registered upstream");
    expect((await admin.get(`/v1/sources/${s.id}`)).status).to.equal(200);
    expect((await admin.delete(`/v1/sources/${s.id}?force=true`)).status).to.equal(204);
    expect((await admin.get(`/v1/sources/${s.id}`)).status).to.equal(404);
  });

  it("organization sources: created with org_id, seen by members, 404 for others, listed under the org", async () => {
    const owner = server.cli("admin", "user", "create", "--username", "orgowner", "--email", "oo@example.com").json;
    const member = server.cli("admin", "user", "create", "--username", "orgmember", "--email", "om@example.com").json;
    const outsider = server.cli("admin", "user", "create", "--username", "outsider", "--email", "out@example.com").json;
    const org = server.cli("admin", "org", "create", "--name", "Source Org", "--owner", owner.id).json;
    server.cli("admin", "org", "add-member", org.id, member.id);
    const ownerClient = server.client(owner.api_key);
    const created = await ownerClient.post(`/v1/sources?org_id=${org.id}`, { key: "http-new-requests", name: "Org Hook" });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.data.id;
    const memberClient = server.client(member.api_key);
    expect((await memberClient.get(`/v1/sources/${id}`)).status).to.equal(200);
    expect((await memberClient.get(`/v1/orgs/${org.id}/sources`)).body.data.map((x: { id: string }) => x.id)).to.deep.equal([id]);
    expect((await memberClient.get("/v1/users/me/sources")).body.data).to.deep.equal([]);
    const outsiderClient = server.client(outsider.api_key);
    expect((await outsiderClient.get(`/v1/sources/${id}`)).status).to.equal(404);
    expect((await outsiderClient.get(`/v1/sources/${id}/event_summaries`)).status).to.equal(404);
    expect((await outsiderClient.delete(`/v1/sources/${id}`)).status).to.equal(404);
    expect((await outsiderClient.get(`/v1/orgs/${org.id}/sources`)).status).to.equal(404);
    expect((await outsiderClient.post(`/v1/sources?org_id=${org.id}`, { key: "http-new-requests" })).status).to.equal(404);
  });

  describe("a refused deploy or update from code saves no component", () => {
    const action = (key: string, version: string) =>
      `export default { key: "${key}", name: "Act ${key}", version: "${version}", type: "action", async run() { return "${version}"; } };`;
    const source = (
      key: string,
      version: string,
      hook = "",
    ) => `export default { key: "${key}", name: "Refused ${key}", version: "${version}",
      props: { http: "$.interface.http", count: { type: "integer", min: 1, max: 3 } }, hooks: { ${hook} }, async run() {} };`;
    const throwing = (hook: string) => `async ${hook}() { throw new Error("no webhook today"); }`;
    const version = async (key: string) => {
      const r = await admin.get(`/v1/components/${key}`);
      return r.status === 200 ? r.body.data.version : r.status;
    };
    const run = async (key: string) => (await admin.post(`/v1/components/${key}/run`, {})).body.data.return_value;

    it("an action posted as a source: 400, its key still names the saved version and runs it", async () => {
      const saved = await admin.post("/v1/components", { component_code: action("me-act2", "v1") });
      expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
      expect(await run("me-act2")).to.equal("v1");
      const r = await admin.post("/v1/sources", { component_code: action("me-act2", "v2") });
      expect(r.status).to.equal(400);
      expect(r.body.error).to.match(/only sources can be deployed/);
      expect(await version("me-act2")).to.equal("v1");
      expect(await run("me-act2")).to.equal("v1");
      const fresh = await admin.post("/v1/sources", { component_code: action("me-act-new", "v1") });
      expect(fresh.status).to.equal(400);
      expect(await version("me-act-new"), "never saved").to.equal(404);
    });

    it("a source whose deploy hook throws (400 hook_failed) is not saved, nor its key moved", async () => {
      const r = await admin.post("/v1/sources", {
        component_code: source("me-hooked", "v1", throwing("deploy")),
        configured_props: { count: 1 },
      });
      expect(r.status).to.equal(400);
      expect(r.body.code).to.equal("hook_failed");
      expect(await version("me-hooked")).to.equal(404);
      expect((await admin.post("/v1/components", { component_code: action("me-act3", "v1") })).status).to.equal(200);
      const again = await admin.post("/v1/sources", {
        component_code: source("me-act3", "v2", throwing("activate")),
        configured_props: { count: 1 },
      });
      expect(again.body.code).to.equal("hook_failed");
      expect(await version("me-act3")).to.equal("v1");
      expect(await run("me-act3")).to.equal("v1");
    });

    it("a source whose configured props are out of range (400) is not saved", async () => {
      const r = await admin.post("/v1/sources", { component_code: source("me-ranged", "v1"), configured_props: { count: 9 } });
      expect(r.status).to.equal(400);
      expect(r.body.details[0].path).to.equal("configured_props.count");
      expect(await version("me-ranged")).to.equal(404);
      // Accepted, the same code is saved under its key, as the source's component.
      const ok = await admin.post("/v1/sources", { component_code: source("me-ranged", "v1"), configured_props: { count: 2 } });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect((await admin.get("/v1/components/me-ranged")).body.data).to.include({ id: ok.body.data.component_id, version: "v1" });
    });

    it("PUT /sources/{id} with refused code (an action, a throwing activate hook, props out of range) keeps the component and key", async () => {
      const deployed = await admin.post("/v1/sources", { component_code: source("me-updated", "v1"), configured_props: { count: 1 } });
      expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
      const id = deployed.body.data.id as string;
      expect(await version("me-updated")).to.equal("v1");
      const refused = [
        { component_code: action("me-updated", "v2") },
        { component_code: source("me-updated", "v3", throwing("activate")) },
        { component_code: source("me-updated", "v4"), configured_props: { count: 9 } },
      ];
      for (const body of refused) {
        const r = await admin.put(`/v1/sources/${id}`, body);
        expect(r.status, JSON.stringify(r.body)).to.equal(400);
        expect(await version("me-updated"), body.component_code).to.equal("v1");
      }
      expect((await admin.get(`/v1/sources/${id}`)).body.data.component_id).to.equal(deployed.body.data.component_id);
      // An accepted update saves the new code and moves the key.
      const ok = await admin.put(`/v1/sources/${id}`, { component_code: source("me-updated", "v5"), configured_props: { count: 3 } });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect((await admin.get("/v1/components/me-updated")).body.data).to.include({ id: ok.body.data.component_id, version: "v5" });
    });
  });

  it("one user's deploys run their hooks a few at a time (HEADWATER_RUNS_PER_OWNER, 4), while another user's deploy goes on", async () => {
    const created = server.cli("admin", "user", "create", "--username", "hook-bystander", "--email", "hb@example.com", "--plan", "paid");
    const bystander = server.client(created.json.api_key);
    const slow = (n: number) => `export default {
      name: "Slow hook ${n}", version: "0.0.1",
      props: { http: { type: "$.interface.http" } },
      hooks: { async deploy() { const start = Date.now(); await new Promise((r) => setTimeout(r, 400)); this.$emit({ start, end: Date.now() }); } },
      async run() {},
    };`;
    const deploys = Array.from({ length: 8 }, (_, n) => admin.post("/v1/sources", { component_code: slow(n) }));
    await sleep(100);
    const started = Date.now();
    const quick = await bystander.post("/v1/sources", { component_code: slow(99).replace("400", "1") });
    const bystanderMs = Date.now() - started;
    expect(quick.status, JSON.stringify(quick.body)).to.equal(200);
    const sources = (await Promise.all(deploys)).map((r) => {
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      return r.body.data as { id: string };
    });
    const spans = await Promise.all(
      sources.map(
        async (source) =>
          (await eventually(async () => (await events(admin, source.id))[0]?.event, 10_000, "the hook's event")) as {
            start: number;
            end: number;
          },
      ),
    );
    const overlapAt = (t: number) => spans.filter((s) => s.start <= t && t < s.end).length;
    const most = Math.max(...spans.map((s) => overlapAt(s.start)));
    expect(most, `hooks at once: ${JSON.stringify(spans)}`).to.be.at.most(4);
    expect(most, "they did run side by side, a few at a time").to.be.at.least(2);
    expect(bystanderMs, "another user's deploy does not wait behind them").to.be.below(2_000);
  });

  it("refuses to deploy an action, and unknown component ids", async () => {
    const action = await admin.post("/v1/sources", { key: "helper_functions-format-json" });
    expect(action.status).to.equal(400);
    expect(action.body.error).to.match(/action/);
    expect((await admin.post("/v1/sources", { component_id: "sc_nope0000000000" })).status).to.equal(404);
    expect((await admin.post("/v1/sources", { name: "nothing" })).status).to.equal(400);
  });
});
