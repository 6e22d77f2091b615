import { expect } from "chai";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { Receiver } from "../harness/receiver.js";
import { TestServer } from "../harness/server.js";
import { fileURLToPath } from "node:url";
import { cliHome, CuttableProxy, runCli, RunningCli, type CliResult } from "./cliHarness.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

// The user CLI as people and scripts run it: the real binary, as a child process, against a real server.

/** A multi-file component in Pipedream's layout: an app file, a common base, a source importing both without extensions. */
function writeComponent(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "hw-component-"));
  fs.mkdirSync(path.join(root, "common"));
  fs.mkdirSync(path.join(root, "sources", "new-widget"), { recursive: true });
  fs.writeFileSync(
    path.join(root, "widget.app.mjs"),
    `export default { type: "app", app: "widget", propDefinitions: { size: { type: "integer", label: "Size" } }, methods: { name() { return "widget"; } } };\n`,
  );
  fs.writeFileSync(
    path.join(root, "common", "base.mjs"),
    `// import "./not-there" is only a comment, not an import
export default { props: { http: { type: "$.interface.http" } }, methods: { tag(x) { return "<" + x + ">"; } } };\n`,
  );
  fs.writeFileSync(
    path.join(root, "sources", "new-widget", "new-widget.mjs"),
    `import widget from "../../widget.app";
import base from "../../common/base";
export default { ...base, key: "widget-new-widget", name: "New widget", version: "0.2.0",
  props: { ...base.props, widget, size: { propDefinition: [widget, "size"] } },
  methods: { ...base.methods },
  async run(event) {
    console.log("widget got " + (event.method ?? "a manual run"));
    this.$emit({ tag: this.tag(this.widget.name()), size: this.size, body: event.body ?? null }, { summary: "size " + this.size });
  } };\n`,
  );
  return root;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const oneLine = (r: CliResult) => {
  const lines = r.stderr.trim().split("\n");
  expect(lines, r.stderr).to.have.length(1);
  return lines[0];
};

describe("user CLI (real binary, real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: { HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000", HEADWATER_ENDPOINT_BURST: "1000", HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" },
  });
  const { env, configDir } = cliHome();
  const hw = (...args: string[]) => runCli(args, env);
  let componentDir: string;

  before(async () => {
    await server.start();
    componentDir = writeComponent();
  });
  after(() => server.stop());

  describe("login, whoami, logout", () => {
    it("logs in with --api-url/--api-key, checked against the server, and saves the profile with mode 0600", () => {
      const login = hw("login", "--api-url", `${server.url}/v1`, "--api-key", server.bootstrapKey);
      expect(login.status, login.stderr).to.equal(0);
      expect(login.stdout).to.match(/Logged in to http:\/\/127\.0\.0\.1:\d+ as operator/);
      const file = path.join(configDir, "config.json");
      expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
      const saved = JSON.parse(fs.readFileSync(file, "utf8"));
      expect(saved.profiles.default).to.include({ api_url: server.url, api_key: server.bootstrapKey, username: "operator" });

      const whoami = hw("whoami");
      expect(whoami.status, whoami.stderr).to.equal(0);
      expect(whoami.stdout).to.match(/user\s+operator \(u_/);
      expect(whoami.stdout).to.match(/plan\s+paid/);
      const json = hw("whoami", "--json");
      expect(json.status).to.equal(0);
      expect(json.json).to.include({ username: "operator", email: "operator@localhost" });
      expect(json.json).to.have.property("billing_period_invocations");
    });

    it("keeps several profiles; a free user's whoami shows today's usage; logout forgets one", () => {
      const created = server.cli("admin", "user", "create", "--username", "cli-free", "--email", "cli-free@example.com");
      expect(created.status, created.stderr).to.equal(0);
      const login = hw("login", "--profile", "free", "--api-url", server.url, "--api-key", created.json.api_key, "--json");
      expect(login.status, login.stderr).to.equal(0);
      expect(login.json).to.deep.include({ profile: "free", api_url: server.url });
      expect(login.json.user).to.include({ username: "cli-free" });
      const whoami = hw("whoami", "--profile", "free");
      expect(whoami.stdout).to.match(/user\s+cli-free/);
      expect(whoami.stdout).to.match(/invocations today\s+0 of 10,000/);
      expect(hw("whoami").stdout, "the default profile is still the operator").to.match(/user\s+operator/);
      const viaEnv = runCli(["whoami", "--json"], { ...env, HEADWATER_PROFILE: "free" });
      expect(viaEnv.json.username).to.equal("cli-free");

      const logout = hw("logout", "--profile", "free", "--json");
      expect(logout.json).to.deep.equal({ profile: "free", removed: true });
      const after = hw("whoami", "--profile", "free");
      expect(after.status).to.equal(3);
      expect(oneLine(after)).to.match(/^error: no API URL.*headwater login/);
    });

    it("any valid profile name is saved, __proto__ included (login said saved, and nothing was)", () => {
      for (const name of ["__proto__", "constructor"]) {
        const login = hw("login", "--api-url", server.url, "--api-key", server.bootstrapKey, "--profile", name);
        expect(login.status, login.stderr).to.equal(0);
        const saved = JSON.parse(fs.readFileSync(path.join(configDir, "config.json"), "utf8"));
        expect(Object.prototype.hasOwnProperty.call(saved.profiles, name), `${name} in the file`).to.equal(true);
        const who = hw("whoami", "--profile", name, "--json");
        expect(who.status, who.stderr).to.equal(0);
        expect(JSON.parse(who.stdout).username).to.equal("operator");
        const out = hw("logout", "--profile", name);
        expect(out.status, out.stderr).to.equal(0);
        expect(hw("whoami", "--profile", name).status).to.equal(3);
      }
      expect(hw("whoami", "--json").status, "the default profile is untouched").to.equal(0);
    });

    it("a refused key is exit 3 with one line, and nothing is saved", () => {
      const r = hw("login", "--profile", "bad", "--api-url", server.url, "--api-key", "hw_0000000000000000000000000000000000000000");
      expect(r.status).to.equal(3);
      expect(oneLine(r)).to.match(/refused this API key: nothing was saved/);
      expect(JSON.parse(fs.readFileSync(path.join(configDir, "config.json"), "utf8")).profiles).to.not.have.property("bad");
      const asJson = hw("whoami", "--api-key", "hw_0000000000000000000000000000000000000000", "--json");
      expect(asJson.status).to.equal(3);
      expect(JSON.parse(asJson.stderr)).to.include({ code: "unauthorized" });
      expect(asJson.stdout).to.equal("");
    });

    it("flags and HEADWATER_API_URL / HEADWATER_API_KEY work without any profile; login without them outside a terminal is a usage error", () => {
      const bare = cliHome().env;
      const viaEnv = runCli(["whoami", "--json"], { ...bare, HEADWATER_API_URL: server.url, HEADWATER_API_KEY: server.bootstrapKey });
      expect(viaEnv.status, viaEnv.stderr).to.equal(0);
      expect(viaEnv.json.username).to.equal("operator");
      const none = runCli(["list", "sources"], bare);
      expect(none.status).to.equal(3);
      const login = runCli(["login", "--json"], bare);
      expect(login.status).to.equal(2);
      expect(JSON.parse(login.stderr)).to.deep.equal({
        error: "not a terminal: pass --api-url and --api-key (or set HEADWATER_API_URL and HEADWATER_API_KEY)",
        code: "usage",
      });
    });
  });

  describe("deploy, list, events, logs, update, pause, resume, run, delete", () => {
    let widgetId: string;
    let widgetEndpoint: string;

    it("deploys a multi-file component from its directory: the entry with the files it imports without extensions", () => {
      const r = hw(
        "deploy",
        path.join(componentDir, "sources", "new-widget"),
        "--name",
        "CLI widget",
        "--prop",
        "size=3",
        "--props",
        '{"widget": {"$auth": {}}}',
        "--json",
      );
      expect(r.status, r.stderr).to.equal(0);
      expect(r.json).to.include({ name: "CLI widget", name_slug: "cli-widget", active: true });
      expect(r.json.configured_props).to.deep.include({ size: 3, widget: "[redacted]" });
      widgetId = r.json.id;
      widgetEndpoint = r.json.configured_props.http.endpoint_url;
      expect(widgetEndpoint).to.match(/^http:\/\/127\.0\.0\.1:\d+\/e\//);
    });

    it("deploys a file as well (same files, same component) and prints the source for people", () => {
      const r = hw(
        "deploy",
        path.join(componentDir, "sources", "new-widget", "new-widget.mjs"),
        "--name",
        "CLI widget file",
        "--prop",
        "size=1",
        "--prop",
        'widget={"$auth":{}}',
      );
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stdout).to.match(/^Deployed CLI widget file \(dc_[0-9a-z]+\)/);
      expect(r.stdout).to.match(/component\s+widget-new-widget@0\.2\.0 \(sc_/);
      expect(r.stdout).to.match(/endpoint\s+http:\/\/127\.0\.0\.1:\d+\/e\//);
      expect(r.stdout).to.match(/status\s+active/);
      const deleted = hw("delete", "cli-widget-file", "--json");
      expect(deleted.status, deleted.stderr).to.equal(0);
    });

    it("deploys a component with the nearest package.json, whose dependencies pin the npm packages it imports without a version", async () => {
      const published = path.resolve(repoRoot, "test/fixtures/published/components/pinned_tools/sources/lodash-version");
      const r = hw("deploy", published, "--name", "CLI pinned", "--json");
      expect(r.status, r.stderr).to.equal(0);
      const run = hw("run", r.json.id, "--json");
      expect(run.status, run.stderr).to.equal(0);
      const events = await server.client().get(`/v1/sources/${r.json.id}/event_summaries?expand=event&limit=1`);
      expect(events.body.data[0].event.lodash, "pinned by pinned_tools/package.json").to.equal("4.17.20");
      expect(hw("delete", r.json.id, "--json").status).to.equal(0);
    });

    it("deploys a registry component by key", () => {
      const r = hw("deploy", "http-new-requests", "--name", "CLI hook", "--json");
      expect(r.status, r.stderr).to.equal(0);
      expect(r.json).to.include({ name: "CLI hook", name_slug: "cli-hook" });
      expect(r.json.configured_props.http.endpoint_url).to.be.a("string");
      const unknown = hw("deploy", "no-such-registry-component");
      expect(unknown.status).to.equal(4);
      expect(oneLine(unknown)).to.match(/^error: .*registry component/);
      const missingFile = hw("deploy", "./nowhere/source.mjs");
      expect(missingFile.status).to.equal(2);
      expect(oneLine(missingFile)).to.equal("error: no such file or directory: ./nowhere/source.mjs");
    });

    it("lists sources in a table and as JSON (every page)", async () => {
      // More than one page of 100 would be slow to make; 12 sources across pages of 10 would not exercise the CLI's
      // own page size, so check the cursors by comparing with the API's total instead.
      const human = hw("list", "sources");
      expect(human.status, human.stderr).to.equal(0);
      const [header, ...rows] = human.stdout.trimEnd().split("\n");
      expect(header).to.match(/^ID\s+NAME\s+STATUS\s+COMPONENT\s+ENDPOINT\s+CREATED$/);
      expect(rows.some((row) => row.startsWith(widgetId) && /cli-widget\s+active/.test(row))).to.equal(true);
      const json = hw("list", "sources", "--json");
      expect(json.json.map((s: any) => s.id)).to.include(widgetId);
      const total = (await server.client().get("/v1/users/me/sources?limit=1")).body.page_info.total_count;
      expect(json.json).to.have.length(total);
      const components = hw("list", "components", "--json");
      expect(components.json.find((c: any) => c.key === "widget-new-widget").sources).to.include(widgetId);
    });

    it("events -f prints the kept events, then follows new ones live as requests arrive at the endpoint", async () => {
      const first = await fetch(`${widgetEndpoint}/kept`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"n":0}',
      });
      expect(first.status).to.equal(200);
      const follow = new RunningCli(["events", "cli-widget", "-f"], env);
      try {
        await follow.until("the kept event", () => follow.stdoutLines.find((l) => l.includes('"body":{"n":0}')));
        await follow.until("following", () => follow.stderr.includes("following CLI widget"));
        for (const n of [1, 2, 3]) {
          const r = await fetch(widgetEndpoint, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ n }),
          });
          expect(r.status).to.equal(200);
        }
        const lines = await follow.until("three live events", () => {
          const live = follow.stdoutLines.filter((l) => /"body":\{"n":[123]\}/.test(l));
          return live.length >= 3 ? live : undefined;
        });
        expect(lines.map((l) => /"n":(\d)/.exec(l)![1])).to.deep.equal(["1", "2", "3"]);
        expect(lines[0]).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+-\d+ size 3 \{"tag":"<widget>","size":3,"body":\{"n":1\}\}$/);
        expect(
          follow.stdoutLines.filter((l) => l.includes('"n":0')),
          "the kept event once",
        ).to.have.length(1);
      } finally {
        expect(await follow.stop()).to.equal(0);
      }
    });

    it("events -f --json prints one JSON object per line", async () => {
      const follow = new RunningCli(["events", widgetId, "-f", "--json", "-n", "1"], env);
      try {
        await follow.until("the newest kept event", () => follow.stdoutLines.length >= 1);
        await fetch(widgetEndpoint, { method: "POST", headers: { "content-type": "application/json" }, body: '{"n":4}' });
        await follow.until("the live event", () => follow.stdoutLines.length >= 2);
        const items = follow.stdoutLines.map((l) => JSON.parse(l));
        expect(items[0].event.body).to.deep.equal({ n: 3 });
        expect(items[1].event.body).to.deep.equal({ n: 4 });
        expect(items[1].metadata).to.include({ emitter_id: widgetId, summary: "size 3" });
      } finally {
        await follow.stop();
      }
    });

    it("events -f reconnects by itself when the connection drops and resumes with Last-Event-ID: nothing missed, nothing twice", async () => {
      const proxy = new CuttableProxy(new URL(server.url));
      await proxy.start();
      // -n 1: the newest kept event, then everything after it, whenever the stream opens.
      const follow = new RunningCli(["events", widgetId, "-f", "-n", "1", "--json", "--api-url", proxy.url], env);
      const bodies = () => follow.stdoutLines.map((l) => JSON.parse(l).event.body.n as number);
      const post = async (n: number) => {
        const r = await fetch(widgetEndpoint, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ n }),
        });
        expect(r.status).to.equal(200);
      };
      try {
        await follow.until("the newest kept event", () => bodies().includes(4));
        await post(10);
        await follow.until("the first live event", () => bodies().includes(10));
        proxy.cut();
        await follow.until("the reconnect notice", () => follow.stderr.includes("connection lost, reconnecting"));
        await post(11);
        await post(12);
        proxy.refusing = false;
        await follow.until("the missed events", () => bodies().includes(12), 30_000);
        await post(13);
        await follow.until("a live event after the reconnect", () => bodies().includes(13));
        expect(bodies()).to.deep.equal([4, 10, 11, 12, 13]);
        expect(follow.stderr).to.include("reconnected");
      } finally {
        await follow.stop();
        await proxy.stop();
      }
    });

    it("events without -f: the last n, oldest first; --json is one document", () => {
      const r = hw("events", "cli-widget", "-n", "2");
      expect(r.status, r.stderr).to.equal(0);
      const lines = r.stdout.trimEnd().split("\n");
      expect(lines).to.have.length(2);
      expect(lines[0]).to.include('"n":12');
      expect(lines[1]).to.include('"n":13');
      const json = hw("events", "cli-widget", "--json");
      expect(json.json.map((e: any) => e.event.body.n)).to.deep.equal([0, 1, 2, 3, 4, 10, 11, 12, 13]);
      const bad = hw("events", "cli-widget", "-n", "500", "--json");
      expect(bad.status).to.equal(2);
      expect(JSON.parse(bad.stderr).code).to.equal("usage");
    });

    it("logs shows runs with their console lines; logs -f follows new runs", async () => {
      const r = hw("logs", "cli-widget", "-n", "1");
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stdout).to.match(/inv_[0-9a-z]+ http ok \d+ ms/);
      expect(r.stdout).to.match(/log\s+widget got POST/);
      const follow = new RunningCli(["logs", "cli-widget", "-f", "-n", "0"], env);
      try {
        await follow.until("following", () => follow.stderr.includes("following the logs of CLI widget"));
        await fetch(`${widgetEndpoint}?live=1`, { method: "GET" });
        await follow.until("the live run", () => follow.stdoutLines.some((l) => l.includes("widget got GET")));
        expect(
          follow.stdoutLines.filter((l) => l.includes("widget got POST")),
          "-n 0 prints no history",
        ).to.have.length(0);
      } finally {
        await follow.stop();
      }
    });

    it("update merges --prop into the props; pause and resume keep them; run prints the outcome", async () => {
      const updated = hw("update", "cli-widget", "--prop", "size=5", "--json");
      expect(updated.status, updated.stderr).to.equal(0);
      expect(updated.json.configured_props).to.deep.include({ size: 5, widget: "[redacted]" });
      const paused = hw("pause", "cli-widget");
      expect(paused.status, paused.stderr).to.equal(0);
      expect(paused.stdout).to.equal(`Paused CLI widget (${widgetId})\n`);
      expect(hw("list", "sources").stdout).to.match(new RegExp(`${widgetId}\\s+cli-widget\\s+paused`));
      const renamed = hw("update", widgetId, "--name", "CLI widget two", "--json");
      expect(renamed.json, "an update keeps a paused source paused").to.include({ active: false, name_slug: "cli-widget-two" });
      const resumed = hw("resume", "cli-widget-two", "--json");
      expect(resumed.json).to.include({ active: true });
      expect(resumed.json.configured_props).to.deep.include({ size: 5 });

      const run = hw("run", "cli-widget-two", "--event", '{"body": {"manual": 1}}');
      expect(run.status, run.stderr).to.equal(0);
      expect(run.stdout).to.match(/^Run inv_[0-9a-z]+: ok/);
      expect(run.stdout).to.match(/emitted 1 event:/);
      expect(run.stdout).to.match(/widget got a manual run/);
      const runJson = hw("run", widgetId, "--json");
      expect(runJson.json).to.include({ ok: true });
      expect(runJson.json.emitted).to.have.length(1);
      const events = await server.client().get(`/v1/sources/${widgetId}/event_summaries?expand=event&limit=1`);
      expect(events.body.data[0].event).to.deep.equal({ tag: "<widget>", size: 5, body: null });
    });

    it("deploy --update replaces the code of an existing source", () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-failing-"));
      fs.writeFileSync(
        path.join(dir, "fails.mjs"),
        `export default { name: "Fails", version: "0.0.1", props: { widget: { type: "object", optional: true }, size: { type: "integer", optional: true } },
  async run() { throw new Error("broken on purpose"); } };\n`,
      );
      const updated = hw("deploy", dir, "--update", widgetId, "--json");
      expect(updated.status, updated.stderr).to.equal(0);
      expect(updated.json.id).to.equal(widgetId);
      const run = hw("run", widgetId);
      expect(run.status, "a failed run exits 1").to.equal(1);
      expect(run.stdout).to.match(/: failed/);
      expect(run.stdout).to.include("Error: broken on purpose");
    });

    it("delete removes the source; a follower is told (exit 4); it is then not found (exit 4)", async () => {
      const follow = new RunningCli(["events", widgetId, "-f"], env);
      await follow.until("following", () => follow.stderr.includes("following CLI widget two"));
      const deleted = hw("delete", "cli-widget-two");
      expect(deleted.status, deleted.stderr).to.equal(0);
      expect(deleted.stdout).to.equal(`Deleted CLI widget two (${widgetId})\n`);
      expect(await follow.exited).to.equal(4);
      expect(follow.stderr).to.match(/error: the stream ended: the source was deleted\n$/);
      const again = hw("events", widgetId);
      expect(again.status).to.equal(4);
      oneLine(again);
      const byName = hw("logs", "cli-widget-two", "--json");
      expect(byName.status).to.equal(4);
      expect(JSON.parse(byName.stderr)).to.include({ code: "not_found" });
    });
  });

  describe("organizations", () => {
    it("deploys into an organization with --org, lists its sources and finds them by name with --org", () => {
      const me = hw("whoami", "--json").json;
      const org = server.cli("admin", "org", "create", "--name", "CLI Org", "--owner", me.id);
      expect(org.status, org.stderr).to.equal(0);
      const deployed = hw("deploy", "http-new-requests", "--name", "Org hook", "--org", org.json.id, "--json");
      expect(deployed.status, deployed.stderr).to.equal(0);
      const listed = hw("list", "sources", "--org", org.json.id, "--json");
      expect(listed.json.map((s: any) => s.id)).to.deep.equal([deployed.json.id]);
      expect(
        hw("list", "sources", "--json").json.map((s: any) => s.id),
        "not among the user's own",
      ).to.not.include(deployed.json.id);
      expect(hw("events", "org-hook").status).to.equal(4);
      const events = hw("events", "org-hook", "--org", org.json.id, "--json");
      expect(events.status, events.stderr).to.equal(0);
      expect(events.json).to.deep.equal([]);
      expect(hw("whoami").stdout).to.match(/orgs\s+CLI Org \(o_/);

      // Webhooks and subscriptions in the organization too.
      const hook = hw("webhook", "create", "https://hooks.invalid/org", "--name", "org-hook", "--org", org.json.id, "--json");
      expect(hook.status, hook.stderr).to.equal(0);
      expect(hw("list", "webhooks", "--org", org.json.id, "--json").json.map((w: any) => w.id)).to.deep.equal([hook.json.id]);
      expect(
        hw("list", "webhooks", "--json").json.map((w: any) => w.id),
        "not among the user's own",
      ).to.not.include(hook.json.id);
      const subscribed = hw("subscribe", "--emitter", "org-hook", "--listener", hook.json.id, "--org", org.json.id, "--json");
      expect(subscribed.status, subscribed.stderr).to.equal(0);
      const orgSubscriptions = hw("list", "subscriptions", "--org", org.json.id, "--json").json;
      expect(orgSubscriptions.map((x: any) => [x.emitter_id, x.listener_id])).to.deep.equal([[deployed.json.id, hook.json.id]]);
      expect(
        hw("list", "subscriptions", "--json").json.map((x: any) => x.listener_id),
        "the subscription is the organization's",
      ).to.not.include(hook.json.id);
    });
  });

  describe("routing commands", () => {
    it("webhook create, subscribe (by name), list webhooks / subscriptions; an event then reaches the webhook", async () => {
      const receiver = await new Receiver().start();
      try {
        const deployed = hw("deploy", "http-new-requests", "--name", "routed", "--json");
        expect(deployed.status, deployed.stderr).to.equal(0);
        const hook = hw("webhook", "create", `${receiver.url}/hook`, "--name", "mine", "--json");
        expect(hook.status, hook.stderr).to.equal(0);
        expect(hook.json).to.include({ url: `${receiver.url}/hook`, name: "mine" });
        expect(hook.json.id).to.match(/^wh_/);
        const subscribed = hw("subscribe", "--emitter", "routed", "--listener", hook.json.id, "--json");
        expect(subscribed.status, subscribed.stderr).to.equal(0);
        expect(subscribed.json).to.include({ emitter_id: deployed.json.id, listener_id: hook.json.id, event_name: "" });
        const human = hw("subscribe", "--emitter", "routed", "--listener", hook.json.id, "--channel", "$errors");
        expect(human.status, human.stderr).to.equal(0);
        expect(human.stdout).to.include(`Subscribed ${hook.json.id} to ${deployed.json.id} on $errors`);

        const webhooks = hw("list", "webhooks", "--json");
        expect(webhooks.status, webhooks.stderr).to.equal(0);
        expect(webhooks.json.map((w: { id: string }) => w.id)).to.include(hook.json.id);
        const subscriptions = hw("list", "subscriptions", "--json");
        expect(subscriptions.status, subscriptions.stderr).to.equal(0);
        const mine = subscriptions.json.filter((x: { listener_id: string }) => x.listener_id === hook.json.id);
        expect(mine.map((x: { event_name: string }) => x.event_name).sort()).to.deep.equal(["", "$errors"]);
        const table = hw("list", "webhooks");
        expect(table.stdout).to.include(hook.json.id).and.to.include("mine");

        const endpoint = deployed.json.configured_props.http.endpoint_url as string;
        expect(
          (await fetch(endpoint, { method: "POST", body: JSON.stringify({ via: "cli" }), headers: { "content-type": "application/json" } }))
            .status,
        ).to.equal(200);
        const [delivery] = await receiver.waitFor((r) => r.path === "/hook");
        expect(delivery.headers["x-headwater-emitter-id"]).to.equal(deployed.json.id);
        expect(JSON.parse(delivery.body).event.body).to.deep.equal({ via: "cli" });
      } finally {
        await receiver.stop();
      }
    });
  });

  describe("prop options", () => {
    it("options lists a prop's choices: a static list, a page, every page with --all, props given so far; exit 4 for an unknown prop", async () => {
      const saved = await server.client().post("/v1/components", {
        component_code: `export default {
          key: "cli-options", name: "CLI options", version: "0.1.0",
          props: {
            region: { type: "string", options: ["eu", { label: "United States", value: "us" }] },
            letter: { type: "string", async options({ page }) { return [["a", "b"], ["c"]][page] ?? []; } },
            item: {
              type: "string",
              async options({ prevContext }) {
                const n = prevContext?.nextPageToken ?? 0;
                return { options: [{ label: this.region + " item " + n, value: n }], context: n < 2 ? { nextPageToken: n + 1 } : {} };
              },
            },
          },
          async run() {},
        };`,
      });
      expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
      const table = hw("options", "cli-options", "region");
      expect(table.status, table.stderr).to.equal(0);
      expect(table.stdout).to.match(/LABEL\s+VALUE/);
      expect(table.stdout).to.match(/United States\s+"?us"?/);
      const first = hw("options", "cli-options", "letter", "--json");
      expect(first.json).to.deep.equal({
        options: [
          { label: "a", value: "a" },
          { label: "b", value: "b" },
        ],
        context: null,
      });
      expect(hw("options", "cli-options", "letter", "--page", "1", "--json").json.options).to.deep.equal([{ label: "c", value: "c" }]);
      const letters = hw("options", "cli-options", "letter", "--all", "--json");
      expect(letters.json.options.map((o: { value: string }) => o.value)).to.deep.equal(["a", "b", "c"]);
      const items = hw("options", "cli-options", "item", "--all", "--prop", "region=eu", "--json");
      expect(items.status, items.stderr).to.equal(0);
      expect(items.json.options.map((o: { label: string }) => o.label)).to.deep.equal(["eu item 0", "eu item 1", "eu item 2"]);
      const onePage = hw("options", "cli-options", "item", "--prop", "region=us");
      expect(onePage.stdout).to.include("us item 0");
      expect(onePage.stderr).to.include(`--prev-context '{"nextPageToken":1}'`);
      const unknown = hw("options", "cli-options", "nope");
      expect(unknown.status).to.equal(4);
      expect(hw("options", "cli-options", "letter", "--page", "x").status).to.equal(2);
    });
  });

  describe("workflows", () => {
    it("workflow deploy uploads step files with their relative imports, prints JSON; a second deploy is a new version; run, list, delete", () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-workflow-"));
      fs.mkdirSync(path.join(dir, "actions", "lib"), { recursive: true });
      fs.writeFileSync(path.join(dir, "actions", "lib", "shout.mjs"), "export const shout = (s) => s.toUpperCase() + '!';\n");
      fs.writeFileSync(
        path.join(dir, "actions", "shout.mjs"),
        `import { shout } from "./lib/shout";
export default { key: "cli-shout", name: "Shout", version: "0.1.0", type: "action",
  props: { text: { type: "string", label: "Text" } },
  async run({ $ }) { $.export("$summary", "shouted"); return shout(this.text); } };\n`,
      );
      const file = path.join(dir, "Shouter.yaml");
      const write = (extra: string) =>
        fs.writeFileSync(
          file,
          `name: Shouter
trigger: none
steps:
  - name: shout
    action: ./actions/shout.mjs
    props:
      text: "{{steps.trigger.event.word}}"
${extra}`,
        );
      write("");
      const first = hw("workflow", "deploy", file);
      expect(first.status, first.stderr).to.equal(0);
      const deployed = JSON.parse(first.stdout);
      expect(deployed).to.include({ key: "shouter", name: "Shouter", version: 1 });
      expect(deployed.id).to.match(/^p_/);
      write(`  - name: twice
    code: |
      async (steps, $) => steps.shout.$return_value + steps.shout.$return_value
`);
      const second = hw("workflow", "deploy", file, "--json");
      expect(second.status, second.stderr).to.equal(0);
      expect(JSON.parse(second.stdout)).to.include({ id: deployed.id, version: 2 });
      const ran = hw("workflow", "run", deployed.id, "--event", '{"word":"hey"}', "--json");
      expect(ran.status, ran.stderr).to.equal(0);
      expect(ran.json.steps.map((s: any) => s.return_value)).to.deep.equal(["HEY!", "HEY!HEY!"]);
      const human = hw("workflow", "run", deployed.id, "--event", '{"word":"yo"}');
      expect(human.stdout).to.include("twice ok").and.to.include("YO!YO!");
      const listed = hw("workflow", "list");
      expect(listed.status, listed.stderr).to.equal(0);
      expect(listed.stdout).to.include(deployed.id).and.to.include("shout → twice").and.to.include("v2");
      const bad = path.join(dir, "bad.yaml");
      fs.writeFileSync(bad, "name: Bad\nsteps:\n  - name: x\n    action: ./missing.mjs\n");
      const missing = hw("workflow", "deploy", bad);
      expect(missing.status).to.equal(1);
      expect(oneLine(missing)).to.match(/cannot find|missing\.mjs/);
      const noFile = hw("workflow", "deploy", path.join(dir, "nowhere.yaml"));
      expect(noFile.status, "a local file that is not there is a usage error, as for deploy").to.equal(2);
      expect(oneLine(noFile)).to.equal(`error: no such file or directory: ${path.join(dir, "nowhere.yaml")}`);
      const deleted = hw("workflow", "delete", deployed.id);
      expect(deleted.status, deleted.stderr).to.equal(0);
      expect(hw("workflow", "run", deployed.id).status).to.equal(4);
    });
  });

  describe("errors, help and completion", () => {
    it("usage errors are exit 2, a line or JSON with --json", () => {
      const unknown = hw("deploy", "x", "--bogus");
      expect(unknown.status).to.equal(2);
      expect(oneLine(unknown)).to.equal("error: unknown option '--bogus'");
      const json = hw("deploy", "--json");
      expect(json.status).to.equal(2);
      expect(JSON.parse(json.stderr)).to.deep.equal({ error: "missing required argument 'target'", code: "usage" });
      expect(json.stdout).to.equal("");
      const badProps = hw("deploy", "http-new-requests", "--props", "{nope", "--json");
      expect(badProps.status).to.equal(2);
      expect(JSON.parse(badProps.stderr).error).to.match(/^--props is not JSON/);
      const typo = hw("delpoy", "--json");
      expect(typo.status).to.equal(2);
      expect(JSON.parse(typo.stderr)).to.include({ code: "usage" });
      expect(JSON.parse(typo.stderr).error).to.match(/unknown command 'delpoy'.*deploy/);
    });

    it("an unknown source is exit 4", () => {
      const r = hw("events", "no-such-source");
      expect(r.status).to.equal(4);
      expect(oneLine(r)).to.match(/^error: no source named "no-such-source"/);
      const byId = hw("run", "dc_doesnotexist000", "--json");
      expect(byId.status).to.equal(4);
      expect(JSON.parse(byId.stderr).code).to.equal("not_found");
    });

    it("a name shared by several sources is refused (exit 2, naming them), never one of them at random", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await server.client().post("/v1/sources", { key: "http-new-requests", name: "Twin hook" });
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        ids.push(r.body.data.id);
      }
      const auth = ["--api-url", server.url, "--api-key", server.bootstrapKey];
      const r = hw("delete", "Twin hook", "-y", ...auth);
      expect(r.status, r.stderr).to.equal(2);
      expect(oneLine(r)).to.match(/^error: 2 sources are named "Twin hook": /);
      for (const id of ids) expect(r.stderr).to.include(id);
      for (const id of ids) expect((await server.client().get(`/v1/sources/${id}`)).status, `${id} kept`).to.equal(200);
      const json = hw("pause", "Twin hook", "--json", ...auth);
      expect(json.status).to.equal(2);
      expect(JSON.parse(json.stderr).code).to.equal("usage");
      // A name_slug is unique: it still names exactly one of them.
      const slug = (await server.client().get(`/v1/sources/${ids[1]}`)).body.data.name_slug as string;
      const paused = hw("pause", slug, "--json", ...auth);
      expect(paused.status, paused.stderr).to.equal(0);
      expect((await server.client().get(`/v1/sources/${ids[1]}`)).body.data.active).to.equal(false);
      expect((await server.client().get(`/v1/sources/${ids[0]}`)).body.data.active).to.equal(true);
    });

    it("account list --limit that is not 1 to 100 is a usage error (exit 2), as the README says, not a server refusal", () => {
      const auth = ["--api-url", server.url, "--api-key", server.bootstrapKey];
      for (const limit of ["abc", "0", "101", "1.5", "-1"]) {
        const r = hw("account", "list", "--limit", limit, "--json", ...auth);
        expect(r.status, `--limit ${limit}: ${r.stderr}`).to.equal(2);
        expect(JSON.parse(r.stderr)).to.include({ code: "usage" });
        expect(JSON.parse(r.stderr).error).to.include("a number from 1 to 100");
      }
      const ok = hw("account", "list", "--limit", "100", "--json", ...auth);
      expect(ok.status, ok.stderr).to.equal(0);
      expect(JSON.parse(ok.stdout)).to.have.property("page_info");
    });

    it("a server that cannot be reached is exit 5", async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const r = hw("list", "sources", "--api-url", url);
      expect(r.status).to.equal(5);
      expect(oneLine(r)).to.equal(`error: cannot reach the server at ${url} (ECONNREFUSED)`);
      const json = hw("whoami", "--api-url", url, "--json");
      expect(json.status).to.equal(5);
      expect(JSON.parse(json.stderr)).to.deep.equal({ error: `cannot reach the server at ${url} (ECONNREFUSED)`, code: "unavailable" });
    });

    it("--help lists the user and the operator commands, grouped", () => {
      const r = hw("--help");
      expect(r.status).to.equal(0);
      const userAt = r.stdout.indexOf("User commands");
      const operatorAt = r.stdout.indexOf("Operator commands");
      expect(userAt).to.be.greaterThan(-1);
      expect(operatorAt).to.be.greaterThan(userAt);
      const userPart = r.stdout.slice(userAt, operatorAt);
      for (const command of [
        "login",
        "logout",
        "whoami",
        "deploy",
        "update",
        "pause",
        "resume",
        "delete",
        "run",
        "list",
        "events",
        "logs",
        "subscribe",
        "webhook",
      ]) {
        expect(userPart, command).to.match(new RegExp(`^  ${command}\\b`, "m"));
      }
      for (const command of ["start", "admin", "audit", "projections"])
        expect(r.stdout.slice(operatorAt), command).to.match(new RegExp(`^  ${command}\\b`, "m"));
      expect(r.stdout).to.match(/^ {2}completion <shell>/m);
      expect(r.stdout).to.match(/Exit status: 0 ok; 1 failure/);
      const deploy = hw("deploy", "--help");
      expect(deploy.stdout).to.include("--api-url <url>");
      expect(deploy.stdout).to.include("--prop <key=value>");
    });

    it("completion prints a script for bash, zsh and fish that knows the commands", () => {
      const bash = hw("completion", "bash");
      expect(bash.status).to.equal(0);
      expect(bash.stdout).to.include("complete -o default -F _headwater_completion headwater");
      expect(bash.stdout).to.include('"admin user|list") path="admin user list"');
      expect(bash.stdout).to.match(/"events"\) subcommands=""; flags="[^"]*--follow/);
      expect(hw("completion", "zsh").stdout).to.match(/^#compdef headwater\n/);
      expect(hw("completion", "fish").stdout).to.include("complete -c headwater -n '__fish_use_subcommand' -a deploy");
      expect(hw("completion", "tcsh").status).to.equal(2);
    });
  });
});
