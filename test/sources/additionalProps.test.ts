import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver } from "../harness/receiver.js";
import { deploy, eventually, events } from "./sourcesSupport.js";

// A source's additionalProps(): the props it adds from the configured values (Pipedream runs it
// when a prop marked reloadProps is set). The published "flex" sources add their HTTP interface or
// their timer this way, depending on what the account may do. Over real HTTP against the real
// server: the added props are checked, stored, shown, and given to the run; the endpoint and the
// timer they add work; an update runs it again.

const FLEX = `export default {
  name: "Flex",
  version: "0.0.1",
  props: {
    mode: { type: "string", label: "Mode", options: ["http", "timer", "broken", "app"], reloadProps: true },
    db: "$.service.db",
  },
  async additionalProps(own) {
    if (!own.mode || own.mode.reloadProps !== true) throw new Error("additionalProps() got no prop definitions");
    if (this.mode === "broken") throw new Error("cannot tell which mode");
    if (this.mode === "app") return { other: { type: "app", app: "acme" } };
    return this.mode === "http"
      ? { http: { type: "$.interface.http", customResponse: true }, greeting: { type: "string", default: "hello" } }
      : { timer: { type: "$.interface.timer", default: { intervalSeconds: 1 } } };
  },
  hooks: {
    async activate() { this.db.set("activatedWith", this.http ? this.http.endpoint : "timer " + this.timer.intervalSeconds); },
  },
  async run(event) {
    if (this.http) {
      this.http.respond({ status: 200, body: this.greeting + " " + event.body.name });
      this.$emit({ via: "http", endpoint: this.http.endpoint, name: event.body.name, activatedWith: this.db.get("activatedWith") });
    } else {
      this.$emit({ via: "timer", interval: this.timer.intervalSeconds, fired: event.interval_seconds, activatedWith: this.db.get("activatedWith") });
    }
  },
};`;

describe("sources: props added by additionalProps() (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1", HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" } });
  const probe = new Receiver();
  let admin: ApiClient;
  before(async () => {
    await Promise.all([server.start(), probe.start()]);
    admin = server.client();
  });
  after(() => Promise.all([server.stop(), probe.stop()]));

  it("adds an HTTP interface with a custom response and an input: shown, configurable, and given to the hooks and the run", async () => {
    const source = await deploy(admin, FLEX, { mode: "http", greeting: "hi" }, "flex http");
    const endpoint = source.configured_props.http?.endpoint_url as string;
    expect(source.configured_props).to.deep.equal({ mode: "http", http: { endpoint_url: endpoint }, greeting: "hi" });
    expect(endpoint).to.match(/\/e\/[0-9a-z]{24}$/);

    const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"Ann"}' });
    expect(r.status).to.equal(200);
    expect(await r.text(), "the run answered through the added interface").to.equal("hi Ann");
    const [event] = await eventually("the run's event", async () =>
      (await events(admin, source.id)).length > 0 ? events(admin, source.id) : undefined,
    );
    expect(event.event).to.deep.equal({ via: "http", endpoint, name: "Ann", activatedWith: endpoint });

    // The component says which prop's value decides what is added.
    const component = await admin.get(`/v1/components/${source.component_id}`);
    expect(component.body.data.configurable_props).to.deep.equal([
      { name: "mode", type: "string", label: "Mode", options: ["http", "timer", "broken", "app"], reloadProps: true },
      { name: "db", type: "$.service.db" },
    ]);

    // The added input's default applies when it is left out.
    const defaulted = await deploy(admin, FLEX, { mode: "http" }, "flex default");
    expect(defaulted.configured_props.greeting).to.equal("hello");
  });

  it("adds a timer with its default, which fires; configured values are checked against the props added", async () => {
    const source = await deploy(admin, FLEX, { mode: "timer" }, "flex timer");
    expect(source.configured_props).to.deep.equal({ mode: "timer", timer: { cron: null, interval_seconds: 1, timezone: null } });
    const fired = await eventually("two timer events", async () => {
      const list = await events(admin, source.id);
      return list.length >= 2 ? list : undefined;
    });
    expect(fired[0].event).to.deep.equal({ via: "timer", interval: 1, fired: 1, activatedWith: "timer 1" });

    const unknown = await admin.post("/v1/sources", { component_code: FLEX, configured_props: { mode: "timer", greeting: "x" } });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.details).to.deep.include({ path: "configured_props.greeting", message: "is not a prop of this component" });
    const badTimer = await admin.post("/v1/sources", {
      component_code: FLEX,
      configured_props: { mode: "timer", timer: { intervalSeconds: -5 } },
    });
    expect(badTimer.status).to.equal(400);
    expect(JSON.stringify(badTimer.body.details)).to.include("configured_props.timer");
  });

  it("runs it again on an update: the source switches from its timer to an HTTP interface", async () => {
    const source = await deploy(admin, FLEX, { mode: "timer" }, "flex switch");
    await eventually("a timer event", async () => ((await events(admin, source.id)).length > 0 ? true : undefined));
    const updated = await admin.put(`/v1/sources/${source.id}`, { configured_props: { mode: "http", greeting: "hey" } });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(200);
    const endpoint = updated.body.data.configured_props.http?.endpoint_url as string;
    expect(updated.body.data.configured_props).to.deep.equal({ mode: "http", http: { endpoint_url: endpoint }, greeting: "hey" });
    const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: '{"name":"Bo"}' });
    expect(await r.text()).to.equal("hey Bo");
    // The timer is gone with the prop that made it: no timer event after the switch's.
    const settled = (await events(admin, source.id)).length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const after = await events(admin, source.id);
    expect(after.slice(settled).filter((e) => e.event.via === "timer")).to.deep.equal([]);
    expect(after.filter((e) => e.event.via === "http").map((e) => e.event.name)).to.deep.equal(["Bo"]);
  });

  it("keeps the props it added when a source is paused, resumed or renamed; runs it again for new values", async () => {
    const counted = `export default {
      name: "Counted",
      version: "0.0.1",
      props: { probe: { type: "string", reloadProps: true }, label: { type: "string", optional: true } },
      async additionalProps() {
        await fetch(this.probe + "/additional?label=" + this.label);
        return { http: { type: "$.interface.http" } };
      },
      async run(event) { this.$emit({ label: this.label, endpoint: this.http.endpoint }); },
    };`;
    const calls = () => probe.received.filter((r) => r.path.startsWith("/additional")).map((r) => r.path);
    const source = await deploy(admin, counted, { probe: probe.url, label: "a" }, "counted");
    const endpoint = source.configured_props.http.endpoint_url as string;
    expect(calls()).to.deep.equal(["/additional?label=a"]);
    for (const change of [{ active: false }, { active: true }, { name: "counted again" }]) {
      const r = await admin.put(`/v1/sources/${source.id}`, change);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body.data.configured_props.http, JSON.stringify(change)).to.deep.equal({ endpoint_url: endpoint });
    }
    expect(calls(), "not called to pause, resume or rename").to.deep.equal(["/additional?label=a"]);
    const relabelled = await admin.put(`/v1/sources/${source.id}`, { configured_props: { probe: probe.url, label: "b" } });
    expect(relabelled.status).to.equal(200);
    expect(calls()).to.deep.equal(["/additional?label=a", "/additional?label=b"]);
    const r = await fetch(endpoint, { method: "POST", body: "{}" });
    expect(r.status).to.equal(200);
    const [event] = await eventually("the run's event", async () => {
      const list = await events(admin, source.id);
      return list.length > 0 ? list : undefined;
    });
    expect(event.event).to.deep.equal({ label: "b", endpoint });
  });

  it("sees the source's this.db on an update (what its hooks and runs left), and only reads it", async () => {
    const planned = `export default {
      name: "Planned",
      version: "0.0.1",
      props: { label: { type: "string", reloadProps: true }, db: "$.service.db" },
      async additionalProps() {
        const plan = this.db.get("plan");
        this.db.set("plan", "changed by additionalProps");
        return plan ? { http: { type: "$.interface.http" }, tier: { type: "string", default: plan } } : { http: { type: "$.interface.http" } };
      },
      hooks: { async activate() { if (!this.db.get("plan")) this.db.set("plan", "pro"); } },
      async run() { this.$emit({ plan: this.db.get("plan"), tier: this.tier ?? null }); },
    };`;
    const source = await deploy(admin, planned, { label: "a" }, "planned");
    const endpoint = source.configured_props.http.endpoint_url as string;
    // A new source's db is empty when additionalProps() runs: no tier yet.
    expect(source.configured_props).to.deep.equal({ label: "a", http: { endpoint_url: endpoint } });
    const updated = await admin.put(`/v1/sources/${source.id}`, { configured_props: { label: "b" } });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(200);
    expect(updated.body.data.configured_props).to.deep.equal({ label: "b", http: { endpoint_url: endpoint }, tier: "pro" });
    const r = await fetch(endpoint, { method: "POST", body: "{}" });
    expect(r.status).to.equal(200);
    const [event] = await eventually("the run's event", async () => {
      const list = await events(admin, source.id);
      return list.length > 0 ? list : undefined;
    });
    // What additionalProps() set is not kept.
    expect(event.event).to.deep.equal({ plan: "pro", tier: "pro" });
  });

  it("refuses the deploy when additionalProps() throws or adds a prop it cannot bind, naming why", async () => {
    const count = async () => (await admin.get("/v1/users/me/sources?limit=100")).body.data.length as number;
    const before = await count();
    const broken = await admin.post("/v1/sources", { component_code: FLEX, configured_props: { mode: "broken" } });
    expect(broken.status).to.equal(400);
    expect(broken.body.error).to.equal("the source's additionalProps() failed: Error: cannot tell which mode");
    const app = await admin.post("/v1/sources", { component_code: FLEX, configured_props: { mode: "app" } });
    expect(app.status).to.equal(400);
    expect(app.body.error).to.include("additional props of type app are not supported");
    expect(await count(), "nothing deployed").to.equal(before);
  });
});
