// Actions run by hand, end to end: our own actions in the published Pipedream format
// (test/fixtures/actions) uploaded with their relative imports and run unchanged through
// POST /v1/components/{id}/run on a real server, their $.send.* reaching a real SMTP server, a real
// S3-compatible server and an HTTP receiver on loopback; wrong props answer 400 naming each prop.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { collectFiles } from "../../src/cli/user/componentFiles.js";
import { cliEntry, TestServer, type ApiClient } from "../harness/server.js";
import { Receiver } from "../harness/receiver.js";
import { startSmtp, type SmtpTestServer } from "../harness/smtp.js";
import { startS3, type S3TestServer } from "../harness/s3.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const ACTIONS = path.join(ROOT, "test", "fixtures", "actions");
const fixture = (app: string, name: string) => path.join(ACTIONS, app, "actions", name, `${name}.mjs`);
const OWNER_EMAIL = "owner@example.com";

/** Saves a fixture as the CLI uploads it (the file and every relative import), answering its sc_ id. */
async function save(client: ApiClient, file: string): Promise<string> {
  const { files, entry } = await collectFiles(file);
  const saved = await client.post("/v1/components", { component_files: files, component_entry: entry });
  expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
  return saved.body.data.id as string;
}

const saveCode = async (client: ApiClient, code: string): Promise<string> => {
  const saved = await client.post("/v1/components", { component_code: code });
  expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
  return saved.body.data.id as string;
};

/** The CLI as a child process, without blocking this process (its servers must keep answering). */
function cli(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--no-node-snapshot", cliEntry, ...args], { env: { PATH: process.env.PATH ?? "", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("exit", (status) => resolve({ status, stdout, stderr }));
  });
}

describe("actions run by hand (real server, SMTP, S3 and HTTP receivers)", function () {
  this.timeout(120_000);
  let smtp: SmtpTestServer;
  let s3: S3TestServer;
  const receiver = new Receiver();
  let server: TestServer;
  let admin: ApiClient;
  const ids: Record<string, string> = {};
  const run = (id: string, body: unknown = {}) => admin.post(`/v1/components/${id}/run`, body);
  const ok = async (id: string, body: unknown = {}) => {
    const r = await run(id, body);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data.ok, JSON.stringify(r.body.data.error)).to.equal(true);
    return r.body.data;
  };
  const refused = async (id: string, props: Record<string, unknown>) => {
    const r = await run(id, { props });
    expect(r.status, JSON.stringify(r.body)).to.equal(400);
    expect(r.body.code).to.equal("invalid_request");
    return (r.body.details as { path: string; message: string }[]).map((d) => `${d.path} ${d.message}`);
  };

  before(async () => {
    [smtp, s3] = await Promise.all([startSmtp(), startS3(["archive"]), receiver.start()]);
    server = new TestServer({
      env: {
        HEADWATER_ALLOW_PRIVATE_NETWORKS: "1",
        HEADWATER_BOOTSTRAP_EMAIL: OWNER_EMAIL,
        ...smtp.env("Headwater Actions <actions@example.com>"),
        ...s3.env(),
      },
    });
    await server.start();
    admin = server.client();
    const all: [string, string][] = [
      ["textkit", "change-case"],
      ["textkit", "split-text"],
      ["textkit", "join-list"],
      ["datakit", "pick-fields"],
      ["datakit", "filter-or-exit"],
      ["datakit", "sum-numbers"],
      ["httpkit", "get-json"],
      ["httpkit", "post-webhook"],
      ["notify", "email-report"],
      ["notify", "archive-to-s3"],
      ["notify", "broadcast"],
      ["forms", "build-record"],
      ["webhooks", "reply"],
      ["webhooks", "sign-payload"],
    ];
    for (const [app, name] of all) ids[name] = await save(admin, fixture(app, name));
  });
  after(async () => {
    await server?.stop();
    await Promise.all([smtp?.stop(), s3?.stop(), receiver.stop()]);
  });

  it("propDefinition from an app file, options with {label, value}, a default, app methods, $summary", async () => {
    const titled = await ok(ids["change-case"], { props: { text: "hello big_world", caseStyle: "title" } });
    expect(titled).to.deep.include({ return_value: "Hello Big World", summary: "Rewrote 3 word(s) in title case", exited: null });
    expect(titled.exports).to.deep.equal({ $summary: "Rewrote 3 word(s) in title case" });
    expect(titled.sends).to.deep.equal([]);
    expect((await ok(ids["change-case"], { props: { text: "abc" } })).return_value, "the default option").to.equal("ABC");
    expect(await refused(ids["change-case"], { caseStyle: "Title Case" })).to.deep.equal([
      "body.props.text is required",
      'body.props.caseStyle must be one of ["upper","lower","title","snake"]',
    ]);
  });

  it("string, integer with min/max, booleans with defaults, optional props, component methods", async () => {
    const parts = await ok(ids["split-text"], { props: { text: " a, b,, c ,d", dropEmpty: true, maxParts: 3 } });
    expect(parts.return_value).to.deep.equal(["a", "b", "c"]);
    expect(parts.summary).to.equal("Split into 3 parts");
    const raw = await ok(ids["split-text"], { props: { text: "x; y", separator: ";", trim: false } });
    expect(raw.return_value).to.deep.equal(["x", " y"]);
    expect(await refused(ids["split-text"], { text: 5, maxParts: 0, trim: "yes" })).to.deep.equal([
      "body.props.text must be a string",
      "body.props.maxParts must be at least 1",
      "body.props.trim must be a boolean",
    ]);
    expect(await refused(ids["split-text"], { text: "a", maxParts: 101 })).to.deep.equal(["body.props.maxParts must be at most 100"]);
    expect(await refused(ids["split-text"], { text: "a", maxParts: 2.5, unknown: 1 })).to.deep.equal([
      "body.props.unknown is not a prop of this component",
      "body.props.maxParts must be an integer",
    ]);
  });

  it("string[] and several exports", async () => {
    const joined = await ok(ids["join-list"], { props: { items: ["ab", "cde"], glue: "+" } });
    expect(joined).to.deep.include({ return_value: "ab+cde", summary: null });
    expect(joined.exports).to.deep.equal({ count: 2, lengths: [2, 3] });
    expect(await refused(ids["join-list"], { items: "ab" })).to.deep.equal(["body.props.items must be an array of string"]);
    expect(await refused(ids["join-list"], { items: ["a", 2] })).to.deep.equal(["body.props.items[1] must be a string"]);
  });

  it("object props and a string[] from an app's propDefinition", async () => {
    const picked = await ok(ids["pick-fields"], {
      props: { record: { id: 7, user: { name: "Ada", age: 36 } }, fields: ["id", "user.name", "nope"], keepMissing: true },
    });
    expect(picked.return_value).to.deep.equal({ id: 7, "user.name": "Ada", nope: null });
    expect(picked.exports).to.deep.equal({ missing: ["nope"], $summary: "Picked 2 of 3 fields" });
    expect(await refused(ids["pick-fields"], { record: [1], fields: [1] })).to.deep.equal([
      "body.props.record must be an object",
      "body.props.fields[0] must be a string",
    ]);
  });

  it("any props, static options and $.flow.exit (a successful run that ends early)", async () => {
    const passed = await ok(ids["filter-or-exit"], { props: { value: [1], test: "is a non-empty list" } });
    expect(passed).to.deep.include({ return_value: [1], exited: null });
    const exited = await ok(ids["filter-or-exit"], { props: { value: [], test: "is a non-empty list" } });
    expect(exited).to.deep.include({ ok: true, return_value: null, exited: { reason: "the value did not pass: is a non-empty list" } });
    expect((await ok(ids["filter-or-exit"], { props: { value: { any: "thing" } } })).exited, "any value, default test").to.equal(null);
    expect(await refused(ids["filter-or-exit"], { test: "is odd" })).to.deep.equal([
      "body.props.value is required",
      'body.props.test must be one of ["is truthy","is a non-empty list","is a number above zero"]',
    ]);
  });

  it("ConfigurationError from @pipedream/platform fails the run with CONFIGURATION_ERROR; integer bounds", async () => {
    expect((await ok(ids["sum-numbers"], { props: { numbers: [1, "2.555", 0.1] } })).return_value).to.equal(3.66);
    expect((await ok(ids["sum-numbers"], { props: { numbers: [1, 2.25], decimals: 0 } })).return_value).to.equal(3);
    const bad = await run(ids["sum-numbers"], { props: { numbers: [1, "x"] } });
    expect(bad.status).to.equal(200);
    expect(bad.body.data).to.deep.include({ ok: false, return_value: null, summary: null });
    expect(bad.body.data.error).to.deep.include({
      name: "ConfigurationError",
      code: "CONFIGURATION_ERROR",
      message: 'Item 1 is not a number: "x"',
    });
    expect(await refused(ids["sum-numbers"], { numbers: [1], decimals: 7 })).to.deep.equal(["body.props.decimals must be at most 6"]);
  });

  it("an app prop with $auth, axios from @pipedream/platform, a secret prop", async () => {
    receiver.reply = JSON.stringify([{ id: 1 }, { id: 2 }]);
    const got = await ok(ids["get-json"], {
      props: {
        httpkit: { $auth: { base_url: `${receiver.url}/api/`, api_key: "k-123" } },
        path: "/items",
        query: { page: 2 },
        traceId: "t-9",
      },
    });
    expect(got.return_value).to.deep.equal([{ id: 1 }, { id: 2 }]);
    expect(got.summary).to.equal("Got 2 items from /items");
    const [request] = receiver.received.filter((r) => r.path.startsWith("/api/items"));
    expect(request.path).to.equal("/api/items?page=2&trace=t-9");
    expect(request.headers.authorization).to.equal("Bearer k-123");
    receiver.reply = "{}";
    expect(await refused(ids["get-json"], { httpkit: "k-123", path: "/x" })).to.have.length(1);
    expect((await refused(ids["get-json"], { httpkit: "k-123", path: "/x" }))[0]).to.match(/^body\.props\.httpkit must be/);
  });

  it("an app prop bound to a connected account; a wrong or unknown account answers 400 on the prop", async () => {
    const created = await admin.post("/v1/accounts", {
      app: "httpkit",
      name: "staging",
      auth: { base_url: `${receiver.url}/acct`, api_key: "k-from-account" },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const account = created.body.data.id as string;
    receiver.reply = JSON.stringify({ from: "account" });
    try {
      const got = await ok(ids["get-json"], { props: { httpkit: { authProvisionId: account }, path: "/me" } });
      expect(got.return_value).to.deep.equal({ from: "account" });
      const request = receiver.received.find((r) => r.path === "/acct/me")!;
      expect(request.headers.authorization).to.equal("Bearer k-from-account");
    } finally {
      receiver.reply = "{}";
    }
    const other = await admin.post("/v1/accounts", { app: "textkit", name: "t", auth: { token: "x" } });
    expect(await refused(ids["get-json"], { httpkit: { authProvisionId: other.body.data.id }, path: "/me" })).to.deep.equal([
      "body.props.httpkit.authProvisionId names an account of textkit, this prop needs httpkit",
    ]);
    expect(await refused(ids["get-json"], { httpkit: { authProvisionId: "apn_doesnotexist0000" }, path: "/me" })).to.deep.equal([
      "body.props.httpkit binds a connected account that does not exist (or is not yours)",
    ]);
  });

  it("$.send.http reaches the receiver once the run succeeded (headers, params, JSON data)", async () => {
    const before = receiver.received.length;
    const sent = await ok(ids["post-webhook"], {
      props: { url: `${receiver.url}/hooks/in`, payload: { order: 42 }, headers: { "X-Token": "abc" }, tag: "t1" },
    });
    expect(sent.return_value).to.deep.equal({ queued: true });
    expect(sent.sends).to.deep.equal([{ kind: "http", ok: true, detail: { status: 200, url: `${receiver.url}/hooks/in?tag=t1` } }]);
    const request = receiver.received.slice(before).find((r) => r.path.startsWith("/hooks/in"))!;
    expect(request.method).to.equal("POST");
    expect(request.path).to.equal("/hooks/in?tag=t1");
    expect(JSON.parse(request.body)).to.deep.equal({ order: 42 });
    expect(request.headers["content-type"]).to.equal("application/json");
    expect(request.headers["x-token"]).to.equal("abc");
    expect(request.headers["x-headwater-emitter-id"]).to.equal(ids["post-webhook"]);
    expect(request.headers["x-headwater-invocation-id"]).to.equal(sent.invocation_id);
  });

  it("a send the destination refuses fails the action with SEND_FAILED, naming it", async () => {
    receiver.status = 503;
    try {
      const r = await run(ids["post-webhook"], { props: { url: `${receiver.url}/down`, payload: {} } });
      expect(r.body.data.ok).to.equal(false);
      expect(r.body.data.return_value, "a failed action has no return value").to.equal(null);
      expect(r.body.data.error).to.deep.equal({
        name: "SendError",
        code: "SEND_FAILED",
        message: `$.send.http POST ${receiver.url}/down failed: ${receiver.url}/down answered HTTP 503`,
      });
      expect(r.body.data.sends).to.deep.equal([
        { kind: "http", ok: false, error: `${receiver.url}/down answered HTTP 503`, detail: { status: 503, url: `${receiver.url}/down` } },
      ]);
    } finally {
      receiver.status = 200;
    }
  });

  it("http_request props: execute() sends method, URL with params, headers, a JSON body and basic auth, and returns the answer", async () => {
    const send = await save(admin, fixture("requestkit", "send-request"));
    receiver.routes.set("/items/7", (_req, res) => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ saved: true, id: 7 }));
    });
    const request = {
      url: `${receiver.url}/items/7?keep=1`,
      method: "put",
      params: [
        { name: "q", value: "a b" },
        { name: "skipped", value: "x", disabled: true },
        { name: "", value: "an empty row" },
      ],
      headers: [{ name: "X-Trace", value: "t-1" }],
      body: { contentType: "application/json", type: "raw", mode: "raw", raw: '{"n": 1}' },
      auth: { type: "basic", username: "ada", password: "s3cret" },
    };
    const before = receiver.received.length;
    const data = await ok(send, { props: { request, label: "save" } });
    expect(data.return_value).to.deep.equal({ saved: true, id: 7 });
    expect(data.summary).to.equal(`save: put ${receiver.url}/items/7?keep=1`);
    const [got] = receiver.received.slice(before);
    expect(got.method).to.equal("PUT");
    const url = new URL(got.path, receiver.url);
    expect(url.pathname).to.equal("/items/7");
    expect([...url.searchParams]).to.deep.equal([
      ["keep", "1"],
      ["q", "a b"],
    ]);
    expect(got.headers["x-trace"]).to.equal("t-1");
    expect(got.headers["content-type"]).to.equal("application/json");
    expect(got.headers["authorization"]).to.equal(`Basic ${Buffer.from("ada:s3cret").toString("base64")}`);
    expect(got.body).to.equal('{"n": 1}');
  });

  it("http_request props: a default fills the request ({ method: POST }); headers and params as objects, fields, bearer auth", async () => {
    const post = await save(admin, fixture("requestkit", "send-post"));
    const component = (await admin.get(`/v1/components/${post}`)).body.data;
    expect(component.configurable_props.find((p: { name: string }) => p.name === "request")).to.deep.include({
      type: "http_request",
      default: { method: "POST" },
    });
    const before = receiver.received.length;
    receiver.reply = JSON.stringify({ accepted: 2 });
    const data = await ok(post, {
      props: {
        request: {
          url: `${receiver.url}/fields`,
          headers: { "X-Api-Version": 3 },
          params: { page: 2 },
          body: {
            contentType: "application/json",
            mode: "fields",
            fields: [
              { name: "a", value: "1" },
              { name: "b", value: "two" },
            ],
          },
          auth: { type: "bearer", token: "tok-123" },
        },
      },
    });
    expect(data.return_value).to.deep.equal({ accepted: 2 });
    const form = await ok(post, {
      props: {
        request: {
          url: `${receiver.url}/form`,
          body: { contentType: "application/x-www-form-urlencoded", type: "fields", fields: { a: "1", b: "x y" } },
        },
      },
    });
    expect(form.ok).to.equal(true);
    receiver.reply = "{}";
    const [json, urlencoded] = receiver.received.slice(before);
    expect(json).to.deep.include({ method: "POST", path: "/fields?page=2", body: '{"a":"1","b":"two"}' });
    expect(json.headers).to.deep.include({ "x-api-version": "3", authorization: "Bearer tok-123", "content-type": "application/json" });
    expect(urlencoded).to.deep.include({ method: "POST", path: "/form", body: "a=1&b=x+y" });
    expect(urlencoded.headers["content-type"]).to.equal("application/x-www-form-urlencoded");
  });

  it("http_request props: a wrong value answers 400 naming the field; an error answer fails the run with its body", async () => {
    const send = await save(admin, fixture("requestkit", "send-request"));
    expect(await refused(send, { request: "http://example.com" })).to.deep.equal([
      "body.props.request must be an object with url (and method, headers, params, body, auth)",
    ]);
    expect(await refused(send, { request: { url: 5 } })).to.deep.equal(["body.props.request.url must be a string"]);
    expect(await refused(send, { request: {} })).to.deep.equal(["body.props.request.url is required"]);
    expect(
      await refused(send, {
        request: {
          url: "ftp://example.com/x",
          method: "GET /",
          headers: [{ name: "Bad Name", value: "x" }],
          body: { contentType: "application/json", mode: "raw", raw: { n: 1 } },
          auth: { type: "digest" },
        },
      }),
    ).to.deep.equal([
      "body.props.request.url must be an http or https URL",
      "body.props.request.method must be an HTTP method such as GET or POST",
      'body.props.request.headers[0].name "Bad Name" is not a valid header name',
      "body.props.request.body.raw must be a string (the body's text)",
      'body.props.request.auth.type must be "none", "basic" or "bearer"',
    ]);
    // Pipedream's Send Webhook form: the prop written inline with a default and no URL.
    const webhook = await saveCode(
      admin,
      `export default { name: "Send webhook", version: "1.0.0", type: "action",
        props: { httpRequest: { type: "http_request", label: "HTTP Request Configuration", default: { method: "POST" } } },
        async run() { return await this.httpRequest.execute(); } };`,
    );
    expect(await refused(webhook, {})).to.deep.equal(["body.props.httpRequest.url is required"]);
    receiver.routes.set("/teapot", (_req, res) => {
      res.writeHead(418, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "short and stout" }));
    });
    const failed = (await run(webhook, { props: { httpRequest: { url: `${receiver.url}/teapot` } } })).body.data;
    expect(failed.ok).to.equal(false);
    expect(failed.error.name).to.equal("AxiosError - Request failed with status code 418");
    expect(failed.error.message).to.equal('{"error":"short and stout"}');
    expect(receiver.received.filter((r) => r.path === "/teapot")).to.have.length(1);
    expect(receiver.received.find((r) => r.path === "/teapot")!.method).to.equal("POST");
  });

  it("http_request props in a source: saved and deployed, refused at deploy when wrong, sent when the source runs", async () => {
    const code = `export default { name: "Poll by request", version: "0.1.0",
      props: { request: { type: "http_request", label: "Request", default: { method: "GET" } } },
      async run() { const data = await this.request.execute(); this.$emit({ data, url: this.request.url }); } };`;
    const wrong = await admin.post("/v1/sources", { component_code: code, configured_props: { request: { url: ["x"] } } });
    expect(wrong.status).to.equal(400);
    expect(wrong.body.details).to.deep.include({ path: "configured_props.request.url", message: "must be a string" });
    receiver.routes.set("/status", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ up: true }));
    });
    const created = await admin.post("/v1/sources", {
      component_code: code,
      configured_props: {
        request: {
          url: `${receiver.url}/status`,
          params: [{ name: "from", value: "source" }],
          auth: { type: "bearer", token: "src-t0ken" },
        },
      },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    // The credentials are sealed like a secret: answered redacted.
    expect(created.body.data.configured_props.request).to.deep.equal({
      method: "GET",
      url: `${receiver.url}/status`,
      params: [{ name: "from", value: "source" }],
      auth: "[redacted]",
    });
    const id = created.body.data.id as string;
    const ran = await admin.post(`/v1/sources/${id}/run`, {});
    expect(ran.body.data.ok, JSON.stringify(ran.body)).to.equal(true);
    const events = await admin.get(`/v1/sources/${id}/event_summaries?expand=event`);
    expect(events.body.data[0].event).to.deep.equal({ data: { up: true }, url: `${receiver.url}/status` });
    // Sent back redacted on an update, the stored credentials are kept.
    const updated = await admin.put(`/v1/sources/${id}`, { configured_props: created.body.data.configured_props });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(200);
    expect((await admin.post(`/v1/sources/${id}/run`, {})).body.data.ok).to.equal(true);
    const sent = receiver.received.filter((r) => r.path === "/status?from=source");
    expect(sent.map((r) => r.headers["authorization"])).to.deep.equal(["Bearer src-t0ken", "Bearer src-t0ken"]);
  });

  it("http_request props added by additionalProps() are bound with execute(), run by hand and as a workflow step", async () => {
    const action = await save(admin, fixture("requestkit", "send-when-asked"));
    receiver.routes.set("/asked", (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ heard: true }));
    });
    const request = { url: `${receiver.url}/asked`, body: { contentType: "application/json", mode: "raw", raw: '{"n": 2}' } };
    expect((await ok(action, { props: { send: false } })).return_value).to.deep.equal({ sent: false });
    const before = receiver.received.length;
    const data = await ok(action, { props: { send: true, request } });
    expect(data.return_value).to.deep.equal({ sent: true, answer: { heard: true } });
    // The added prop's default ({ method: "POST" }) filled the request.
    expect(data.summary).to.equal(`sent POST ${receiver.url}/asked`);
    const workflow = await admin.post("/v1/workflows", {
      definition: {
        name: "Send when asked",
        trigger: "none",
        steps: [{ name: "send", component_id: action, props: { send: true, request } }],
      },
    });
    expect(workflow.status, JSON.stringify(workflow.body)).to.equal(200);
    const ran = await admin.post(`/v1/workflows/${workflow.body.data.id as string}/run`, { event: {} });
    expect(ran.status, JSON.stringify(ran.body)).to.equal(200);
    expect(ran.body.data.ok, JSON.stringify(ran.body.data)).to.equal(true);
    expect(ran.body.data.steps[0].return_value).to.deep.equal({ sent: true, answer: { heard: true } });
    const got = receiver.received.slice(before);
    expect(got.map((g) => [g.method, g.path, g.body])).to.deep.equal([
      ["POST", "/asked", '{"n": 2}'],
      ["POST", "/asked", '{"n": 2}'],
    ]);
  });

  it("$.send.email goes to the account owner through the operator's SMTP server (text and HTML)", async () => {
    const text = await ok(ids["email-report"], { props: { subject: "Daily report", lines: ["3 new orders", "1 refund"] } });
    expect(text.sends).to.have.length(1);
    expect(text.sends[0]).to.deep.include({ kind: "email", ok: true });
    expect(text.sends[0].detail.recipient).to.equal(OWNER_EMAIL);
    expect(text.sends[0].detail.messageId).to.match(/^<.+@.+>$/);
    const [mail] = await smtp.waitFor((m) => m.subject === "Daily report");
    expect(mail).to.deep.include({ envelopeFrom: "actions@example.com", to: OWNER_EMAIL, html: false });
    expect(mail.envelopeTo).to.deep.equal([OWNER_EMAIL]);
    expect(mail.from).to.equal('"Headwater Actions" <actions@example.com>');
    expect(mail.text.trim()).to.equal("- 3 new orders\n- 1 refund");
    expect(mail.headers["x-headwater-invocation-id"]).to.equal(text.invocation_id);
    await ok(ids["email-report"], { props: { subject: "HTML report", lines: ["<b>bold</b> & more"], asHtml: true } });
    const [html] = await smtp.waitFor((m) => m.subject === "HTML report");
    expect(html.html && html.html.trim()).to.equal("<ul><li>&lt;b&gt;bold&lt;/b&gt; &amp; more</li></ul>");
  });

  it("$.send.s3 writes <prefix><YYYY>/<MM>/<DD>/<invocation>-<n>.json to the operator's S3-compatible server", async () => {
    const payload = { order: 42, items: ["a", "b"] };
    const archived = await ok(ids["archive-to-s3"], { props: { bucket: "archive", payload, copies: 2 } });
    const day = new Date().toISOString().slice(0, 10).replace(/-/g, "/");
    const keys = [0, 1].map((n) => `headwater/${day}/${archived.invocation_id}-${n}.json`);
    expect(archived.sends).to.deep.equal(keys.map((key) => ({ kind: "s3", ok: true, detail: { bucket: "archive", key } })));
    const objects = await s3.objects("archive", `headwater/${day}/${archived.invocation_id}`);
    expect(objects.map((o) => o.key)).to.deep.equal(keys);
    for (const object of objects) {
      expect(JSON.parse(object.body)).to.deep.equal(payload);
      expect(object.contentType).to.equal("application/json");
      expect(object.metadata).to.deep.equal({ "emitter-id": ids["archive-to-s3"], "invocation-id": archived.invocation_id });
    }
    const missing = await run(ids["archive-to-s3"], { props: { bucket: "no-such-bucket", payload: 1, prefix: "x/" } });
    expect(missing.body.data.ok).to.equal(false);
    expect(missing.body.data.error.code).to.equal("SEND_FAILED");
    expect(missing.body.data.error.message).to.match(/^\$\.send\.s3 to s3:\/\/no-such-bucket\/x\/.* failed: .*NoSuchBucket/);
  });

  it("$.send.sse and $.send.emit are emits (shown in the answer of a run by hand)", async () => {
    const sent = await ok(ids["broadcast"], { props: { message: { hi: 1 } } });
    expect(sent.emits).to.deep.equal([
      { event: { message: { hi: 1 } }, name: "updates" },
      { event: { message: { hi: 1 } }, name: null },
    ]);
  });

  it("additionalProps: the props an action adds from the configured values are checked and bound", async () => {
    const contact = await ok(ids["build-record"], { props: { recordType: "contact", email: "a@example.com" } });
    expect(contact.return_value).to.deep.equal({ type: "contact", email: "a@example.com", vip: false });
    const note = await ok(ids["build-record"], { props: { recordType: "note", body: "hi", fieldCount: 2, field_1: "x", field_2: "y" } });
    expect(note.return_value).to.deep.equal({ type: "note", body: "hi", extra: ["x", "y"] });
    expect(note.summary).to.equal("Built a note with 2 extra field(s)");
    expect(await refused(ids["build-record"], { recordType: "contact" })).to.deep.equal(["body.props.email is required"]);
    expect(await refused(ids["build-record"], { recordType: "note", email: "a@example.com", fieldCount: 1 })).to.deep.equal([
      "body.props.email is not a prop of this component",
      "body.props.body is required",
      "body.props.field_1 is required",
    ]);
    expect(await refused(ids["build-record"], { recordType: "contact", email: 5, vip: "no" })).to.deep.equal([
      "body.props.email must be a string",
      "body.props.vip must be a boolean",
    ]);
    // The props it depends on are checked before additionalProps() runs.
    expect(await refused(ids["build-record"], { recordType: "person", fieldCount: 9 })).to.deep.equal([
      'body.props.recordType must be one of ["contact","note"]',
      "body.props.fieldCount must be at most 5",
    ]);
  });

  it("additionalProps that throw or return invalid props answer 400 saying so", async () => {
    const throwing = await saveCode(
      admin,
      `export default { name: "t", version: "1", type: "action", async additionalProps() { throw new Error("cannot list fields"); }, async run() {} };`,
    );
    const r = await run(throwing);
    expect(r.status).to.equal(400);
    expect(r.body.error).to.equal("the action's additionalProps() failed: Error: cannot list fields");
    expect(r.body.details).to.deep.equal([{ path: "body.props", message: r.body.error }]);
    const invalidProps = await saveCode(
      admin,
      `export default { name: "t2", version: "1", type: "action", props: { a: "string" },
        additionalProps() { return { b: { type: "timer" }, c: { type: "app", app: "x" }, a: { type: "integer", min: 3 } }; }, async run() { return this.a; } };`,
    );
    const bad = await run(invalidProps, { props: { a: "x" } });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/^the action's additionalProps\(\) returned invalid props: props\.b\.type: unknown prop type "timer"/);
    expect(bad.body.error).to.include("props.c: additional props of type app are not supported");
  });

  it("$.respond is recorded (nothing to answer by hand); integer options", async () => {
    const replied = await ok(ids["reply"], { props: { status: 202, body: { accepted: true } } });
    expect(replied.response).to.deep.equal({
      status: 202,
      headers: { "x-replied-by": "headwater", "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ accepted: true }),
    });
    expect(await refused(ids["reply"], { status: 201 })).to.deep.equal(["body.props.status must be one of [200,202,404]"]);
  });

  it("a secret prop, node crypto, and steps given to run({ steps })", async () => {
    const steps = { trigger: { event: { body: { n: 1 } } } };
    const signed = await ok(ids["sign-payload"], { props: { secret: "whsec-1", payload: { n: 1 }, encoding: "base64" }, steps });
    const body = JSON.stringify({ n: 1 });
    expect(signed.return_value).to.deep.equal({
      body,
      signature: createHmac("sha256", "whsec-1").update(body).digest("base64"),
      trigger: steps.trigger,
    });
    expect(await refused(ids["sign-payload"], { payload: {} })).to.deep.equal(["body.props.secret is required"]);
  });

  it("hostile actions: too many sends, a huge payload, wrong argument types, a failed run's sends are not performed", async () => {
    const before = receiver.received.length;
    const flood = await saveCode(
      admin,
      `export default { name: "flood", version: "1", type: "action", async run({ $ }) {
        for (let i = 0; i < 40; i++) $.send.http({ url: "${receiver.url}/flood/" + i }); } };`,
    );
    const flooded = (await run(flood)).body.data;
    expect(flooded.ok).to.equal(false);
    expect(flooded.error.code).to.equal("LIMIT_EXCEEDED");
    expect(flooded.error.message).to.match(/at most 16 sends/);
    expect(flooded.sends).to.have.length(16);
    expect(flooded.sends[0]).to.deep.equal({ kind: "http", ok: false, error: "not sent: the run failed" });
    const huge = await saveCode(
      admin,
      `export default { name: "huge", version: "1", type: "action", async run({ $ }) {
        try { $.send.s3({ bucket: "archive", prefix: "", payload: "x".repeat(2 * 1024 * 1024) }); } catch (e) { return e.name + ": " + e.message; } } };`,
    );
    expect((await ok(huge)).return_value).to.match(
      /^SendLimitError: \$\.send\.s3: \d+ bytes of JSON, over the limit of 524288 bytes per send$/,
    );
    const wrong = await saveCode(
      admin,
      `export default { name: "wrong", version: "1", type: "action", async run({ $ }) { $.send.email({ subject: { not: "text" } }); } };`,
    );
    const refusedSend = (await run(wrong)).body.data;
    expect(refusedSend.ok).to.equal(false);
    expect(refusedSend.error).to.deep.include({ name: "TypeError", code: "USER_ERROR" });
    expect(refusedSend.error.message).to.equal("$.send.email: subject must be a non-empty string, got an object");
    const thrown = await saveCode(
      admin,
      `export default { name: "thrown", version: "1", type: "action", async run({ $ }) { $.send.http({ url: "${receiver.url}/never" }); throw new Error("after the send"); } };`,
    );
    const failed = (await run(thrown)).body.data;
    expect(failed.sends).to.deep.equal([{ kind: "http", ok: false, error: "not sent: the run failed" }]);
    await new Promise((r) => setTimeout(r, 200));
    expect(
      receiver.received.slice(before).filter((r) => /\/(flood|never)/.test(r.path)),
      "nothing was sent",
    ).to.deep.equal([]);
  });

  it("ids and keys: a source is refused, unknown and others' components are 404, registry actions run by key", async () => {
    const source = await run("http-new-requests");
    expect(source.status).to.equal(400);
    expect(source.body.error).to.match(/is a source: deploy it with POST \/v1\/sources/);
    expect((await run("sc_doesnotexist0000")).status).to.equal(404);
    const picked = await ok("helper_functions-pick-fields", { props: { object: { a: 1, b: 2 }, fields: ["b"] } });
    expect(picked).to.deep.include({ return_value: { b: 2 }, summary: "kept 1 of 1 fields" });
    expect((await ok("textkit-change-case", { props: { text: "by key" } })).return_value, "a key of the caller's").to.equal("BY KEY");
    const other = server.client(server.cli("admin", "user", "create", "--username", "other", "--email", "o@example.com").json.api_key);
    expect((await other.post(`/v1/components/${ids["change-case"]}/run`, { props: { text: "x" } })).status).to.equal(404);
    expect((await other.post(`/v1/components/textkit-change-case/run`, { props: { text: "x" } })).status).to.equal(404);
  });

  it("a run by hand is an invocation of the caller: counted in usage", async () => {
    const created = server.cli("admin", "user", "create", "--username", "free", "--email", "free@example.com", "--plan", "free").json;
    const free = server.client(created.api_key);
    const id = await saveCode(free, `export default { name: "n", version: "1", type: "action", async run() { return 1; } };`);
    const usage = async () => (await free.get("/v1/users/me")).body.data;
    expect((await usage()).daily_invocations_used).to.equal(0);
    await free.post(`/v1/components/${id}/run`, {});
    await free.post(`/v1/components/${id}/run`, {});
    const used = await usage();
    expect(used.daily_invocations_used).to.equal(2);
    expect(used.daily_compute_time_used).to.be.a("number");
  });

  it("headwater action run: uploads a file with its imports, prints the outcome; --json; exit 1 when the action failed", async () => {
    const env = {
      HOME: server.dataDir,
      XDG_CONFIG_HOME: path.join(server.dataDir, "cli"),
      HEADWATER_API_URL: server.url,
      HEADWATER_API_KEY: server.bootstrapKey,
    };
    const human = await cli(["action", "run", fixture("textkit", "split-text"), "--prop", "text=a,b", "--props", '{"maxParts": 5}'], env);
    expect(human.status, human.stderr).to.equal(0);
    expect(human.stdout).to.match(/^Split Text textkit-split-text@0\.2\.0 \(inv_[0-9a-z]+\): ok$/m);
    expect(human.stdout).to.match(/summary {2}Split into 2 parts/);
    expect(human.stdout).to.include('  return value\n    [\n      "a",\n      "b"\n    ]');
    const json = await cli(
      ["action", "run", path.join(ACTIONS, "textkit", "actions", "join-list"), "--props", '{"items":["x","y"]}', "--json"],
      env,
    );
    expect(json.status, json.stderr).to.equal(0);
    const data = JSON.parse(json.stdout);
    expect(data).to.deep.include({ ok: true, return_value: "x y", summary: null });
    expect(data.exports).to.deep.equal({ count: 2, lengths: [1, 1] });
    const byKey = await cli(["action", "run", "datakit-sum-numbers", "--prop", 'numbers=[1,"x"]'], env);
    expect(byKey.status).to.equal(1);
    expect(byKey.stdout).to.match(/: failed$/m);
    expect(byKey.stdout).to.include('CONFIGURATION_ERROR ConfigurationError: Item 1 is not a number: "x"');
    const badProps = await cli(["action", "run", "datakit-sum-numbers", "--prop", "decimals=9", "--json"], env);
    expect(badProps.status).to.equal(1);
    expect(JSON.parse(badProps.stderr)).to.deep.include({ code: "invalid_request" });
    const steps = await cli(["action", "run", "webhooks-sign-payload", "--props", '{"secret":"s","payload":{}}', "--steps", "[1]"], env);
    expect(steps.status).to.equal(2);
    expect(steps.stderr).to.match(/--steps must be a JSON object/);
  });
});

describe("actions run by hand without SMTP and S3 configured, private addresses guarded, a small free quota", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_FREE_DAILY_INVOCATIONS: "2" } });
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

  it("$.send.email and $.send.s3 fail clearly, naming what the operator sets; $.send.http to loopback is refused", async () => {
    const email = await save(admin, fixture("notify", "email-report"));
    const s3 = await save(admin, fixture("notify", "archive-to-s3"));
    const http = await save(admin, fixture("httpkit", "post-webhook"));
    const mailed = (await admin.post(`/v1/components/${email}/run`, { props: { subject: "s", lines: [] } })).body.data;
    expect(mailed.ok).to.equal(false);
    expect(mailed.error.code).to.equal("SEND_FAILED");
    expect(mailed.sends).to.deep.equal([
      {
        kind: "email",
        ok: false,
        error: "$.send.email needs an SMTP server: the operator sets HEADWATER_SMTP_URL (and HEADWATER_EMAIL_FROM)",
      },
    ]);
    const stored = (await admin.post(`/v1/components/${s3}/run`, { props: { bucket: "archive", payload: 1 } })).body.data;
    expect(stored.error.message).to.equal(
      "$.send.s3 to s3://archive/headwater/ failed: $.send.s3 needs an S3-compatible endpoint: the operator sets HEADWATER_S3_ENDPOINT, HEADWATER_S3_ACCESS_KEY_ID and HEADWATER_S3_SECRET_ACCESS_KEY",
    );
    const posted = (await admin.post(`/v1/components/${http}/run`, { props: { url: `${receiver.url}/x`, payload: {} } })).body.data;
    expect(posted.ok).to.equal(false);
    expect(posted.sends[0].error).to.match(/^BLOCKED_ADDRESS: /);
    expect(receiver.received).to.deep.equal([]);
  });

  it("an http_request prop's execute() to a loopback address is refused, nothing sent", async () => {
    const send = await save(admin, fixture("requestkit", "send-request"));
    const data = (await admin.post(`/v1/components/${send}/run`, { props: { request: { url: `${receiver.url}/private` } } })).body.data;
    expect(data.ok).to.equal(false);
    expect(data.error.message).to.match(/refusing to connect to /);
    expect(receiver.received).to.deep.equal([]);
  });

  it("past the free daily quota a run by hand is refused with 429 quota_exceeded", async () => {
    const created = server.cli("admin", "user", "create", "--username", "free", "--email", "free@example.com", "--plan", "free").json;
    const free = server.client(created.api_key);
    const id = await saveCode(free, `export default { name: "n", version: "1", type: "action", async run() { return 1; } };`);
    for (let i = 0; i < 2; i++) expect((await free.post(`/v1/components/${id}/run`, {})).body.data.ok).to.equal(true);
    const refused = await free.post(`/v1/components/${id}/run`, {});
    expect(refused.status).to.equal(429);
    expect(refused.body.code).to.equal("quota_exceeded");
    expect(Number(refused.headers.get("retry-after"))).to.be.greaterThan(0);
    expect((await free.get("/v1/users/me")).body.data.daily_invocations_used).to.equal(2);
  });

  it("SMTP and S3 settings that only make sense together are refused at start", async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ HEADWATER_SMTP_URL: "smtp://127.0.0.1:2525" }, /HEADWATER_EMAIL_FROM is required with HEADWATER_SMTP_URL/],
      [
        { HEADWATER_SMTP_URL: "http://mail.example.com", HEADWATER_EMAIL_FROM: "a@example.com" },
        /HEADWATER_SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/,
      ],
      [{ HEADWATER_S3_ENDPOINT: "http://127.0.0.1:9000" }, /HEADWATER_S3_ACCESS_KEY_ID and HEADWATER_S3_SECRET_ACCESS_KEY are required/],
      [{ HEADWATER_EMAIL_FROM: "not an address" }, /HEADWATER_EMAIL_FROM must be an email address/],
    ];
    for (const [env, message] of cases) {
      const result = await cli(["start"], { ...env, PORT: "0", HEADWATER_DATA_DIR: path.join(server.dataDir, "unused") });
      expect(result.status, JSON.stringify(env)).to.equal(1);
      const error = JSON.parse(result.stderr);
      expect(error.code).to.equal("invalid_config");
      expect(error.error).to.match(message);
    }
  });
});
