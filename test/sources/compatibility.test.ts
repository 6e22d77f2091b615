// Published-format components deployed unchanged (test/fixtures/published: apps with
// propDefinitions and methods imported extension-less, common bases spread into sources, CommonJS,
// ESM and TypeScript), through component_url served over loopback and through uploads
// (component_files + component_entry), against a real server; feeds and the APIs the apps call are
// loopback routes of the same Receiver. Connected accounts give the apps their $auth.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { cliEntry, TestServer, type ApiClient } from "../harness/server.js";
import { Receiver } from "../harness/receiver.js";
import { eventually, events } from "./sourcesSupport.js";

const PUBLISHED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../test/fixtures/published");

/** Every file of the published tree, by its path under test/fixtures/published. */
function publishedFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.set(path.relative(PUBLISHED, full).split(path.sep).join("/"), fs.readFileSync(full, "utf8"));
    }
  };
  walk(path.join(PUBLISHED, "components"));
  return files;
}

const RSS = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Loopback news</title><link>http://example.test/</link><description>test feed</description>
<item><title>First post</title><link>http://example.test/1</link><guid>post-1</guid><pubDate>Mon, 01 Jan 2024 10:00:00 GMT</pubDate></item>
<item><title>Second post</title><link>http://example.test/2</link><guid>post-2</guid><pubDate>Tue, 02 Jan 2024 10:00:00 GMT</pubDate></item>
<item><title>Third post</title><link>http://example.test/3</link><guid>post-3</guid><pubDate>Wed, 03 Jan 2024 10:00:00 GMT</pubDate></item>
</channel></rss>`;
const TITLES = ["First post", "Second post", "Third post"];

describe("sources: published components deployed unchanged (compatibility)", function () {
  this.timeout(180_000);
  const receiver = new Receiver();
  const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" } });
  const files = publishedFiles();
  const ACME_KEY = "acme-key-" + crypto.randomBytes(6).toString("hex");
  const OCTO_TOKEN = "octo-token-" + crypto.randomBytes(6).toString("hex");
  const LEDGER_TOKEN = "ledger-token-" + crypto.randomBytes(6).toString("hex");
  /** The ledger_db fixture's "database": rows of one table, and every query it was sent. */
  const ledgerRows = [
    { id: 1, amount: 10, created_at: "2026-11-01T10:00:00Z" },
    { id: 2, amount: 25, created_at: "2026-11-02T10:00:00Z" },
  ];
  const ledgerQueries: { query: string; params: unknown[] }[] = [];
  /** The remote-file fixture's file: its body changes during the test. */
  let remoteFile = "first version\n";
  let admin: ApiClient;
  let acmeAccount: string;
  let octoAccount: string;

  const json = (res: import("node:http").ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const acme = (handler: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse, body: string) => void) =>
    ((req, res, body) =>
      req.headers["x-api-key"] === ACME_KEY ? handler(req, res, body) : json(res, 401, { error: "bad key" })) as Parameters<
      typeof receiver.routes.set
    >[1];
  const octo = (body: unknown) =>
    ((req, res) =>
      req.headers.authorization === `Bearer ${OCTO_TOKEN}` ? json(res, 200, body) : json(res, 401, { error: "no" })) as Parameters<
      typeof receiver.routes.set
    >[1];

  before(async () => {
    await receiver.start();
    // Unknown paths are 404s, so extension-less imports find their files as Node would.
    receiver.status = 404;
    receiver.reply = "not found";
    for (const [rel, text] of files) receiver.files.set(`/${rel}`, { body: text });
    receiver.routes.set("/feeds/rss.xml", (_req, res) => {
      res.writeHead(200, { "content-type": "application/rss+xml; charset=utf-8" });
      res.end(RSS);
    });
    receiver.routes.set("/feeds/rss-gzip.xml", (req, res) => {
      const gzip = /gzip/.test(String(req.headers["accept-encoding"] ?? ""));
      res.writeHead(200, { "content-type": "application/rss+xml", ...(gzip ? { "content-encoding": "gzip" } : {}) });
      res.end(gzip ? zlib.gzipSync(RSS) : RSS);
    });
    receiver.routes.set(
      "/api/lists",
      acme((_req, res) => json(res, 200, { lists: [{ id: "l1", name: "Main" }] })),
    );
    receiver.routes.set(
      "/api/contacts",
      acme((req, res) =>
        json(res, 200, {
          contacts: req.url?.includes("list=l1")
            ? [
                { id: 1, email: "ada@example.test" },
                { id: 2, email: "grace@example.test" },
              ]
            : [],
        }),
      ),
    );
    receiver.routes.set(
      "/api/deals",
      acme((_req, res) =>
        json(res, 200, {
          deals: [
            { id: 7, title: "Small", amount: 50 },
            { id: 8, title: "Big", amount: 5000 },
          ],
        }),
      ),
    );
    receiver.routes.set(
      "/api/hooks",
      acme((_req, res) => json(res, 200, { id: "hook_1" })),
    );
    receiver.routes.set(
      "/api/hooks/hook_1",
      acme((_req, res) => json(res, 200, {})),
    );
    receiver.routes.set(
      "/api/repos/acme/widgets/issues",
      octo([
        { number: 11, title: "Crash on start", labels: ["bug"] },
        { number: 12, title: "Add dark mode", labels: ["feature"] },
      ]),
    );
    receiver.routes.set("/api/repos/acme/widgets/stargazers", octo([{ login: "ada" }, { login: "linus" }]));
    const ledger = (handler: (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse, body: string) => void) =>
      ((req, res, body) =>
        req.headers.authorization === `Bearer ${LEDGER_TOKEN}`
          ? handler(req, res, body)
          : json(res, 401, { error: "bad token" })) as Parameters<typeof receiver.routes.set>[1];
    receiver.routes.set(
      "/ledger/schema",
      ledger((_req, res) => json(res, 200, { payments: { id: { dataType: "integer" } }, refunds: { id: { dataType: "integer" } } })),
    );
    receiver.routes.set(
      "/ledger/sql",
      ledger((_req, res, body) => {
        const { query, params } = JSON.parse(body) as { query: string; params: unknown[] };
        ledgerQueries.push({ query, params });
        json(res, 200, { rows: ledgerRows.filter((row) => row.id > Number(params[0])) });
      }),
    );
    receiver.routes.set("/downloads/notes.txt", (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", etag: `"${remoteFile.length}"` });
      res.end(remoteFile);
    });
    await server.start(60_000);
    admin = server.client();
    const a = await admin.post("/v1/accounts", { app: "acme_crm", name: "work", auth: { api_key: ACME_KEY, base_url: receiver.url } });
    expect(a.status, JSON.stringify(a.body)).to.equal(200);
    acmeAccount = a.body.data.id;
    const o = await admin.post("/v1/accounts", { app: "octo", auth: { oauth_access_token: OCTO_TOKEN, base_url: receiver.url } });
    expect(o.status, JSON.stringify(o.body)).to.equal(200);
    octoAccount = o.body.data.id;
  });
  after(async () => {
    await server.stop();
    await receiver.stop();
  });

  async function deployUrl(rel: string, props: Record<string, unknown> = {}, client = admin): Promise<any> {
    const r = await client.post("/v1/sources", { component_url: `${receiver.url}/components/${rel}`, configured_props: props });
    expect(r.status, `${rel}: ${JSON.stringify(r.body)}`).to.equal(200);
    return r.body.data;
  }

  /** Uploads the app's folder as the user CLI does: files by relative path and the entry. */
  async function deployUpload(app: string, entry: string, props: Record<string, unknown> = {}): Promise<any> {
    const prefix = `components/${app}/`;
    const component_files = Object.fromEntries(
      [...files].filter(([p]) => p.startsWith(prefix)).map(([p, t]) => [p.slice(prefix.length), t]),
    );
    const r = await admin.post("/v1/sources", { component_files, component_entry: entry, configured_props: props });
    expect(r.status, `${app}/${entry}: ${JSON.stringify(r.body)}`).to.equal(200);
    return r.body.data;
  }

  async function run(id: string, event?: unknown): Promise<any> {
    const r = await admin.post(`/v1/sources/${id}/run`, event === undefined ? {} : { event });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data.ok, JSON.stringify(r.body.data.error)).to.equal(true);
    return r.body.data;
  }

  const defaultEvents = async (id: string) => (await events(admin, id)).filter((e) => e.metadata.name === "");

  it("apps without credentials (http, schedule, files, toolbox) need no configuration; their methods and propDefinitions work", async () => {
    const byUrl = await deployUrl("http/sources/new-requests/new-requests.mjs", { emitBodyOnly: true });
    const uploaded = await deployUpload("http", "sources/new-requests/new-requests.mjs");
    for (const source of [byUrl, uploaded]) {
      expect(source.configured_props).to.not.have.property("http");
      const r = await fetch(`${source.configured_props.httpInterface.endpoint_url}/hello?x=1`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ hi: "there" }),
      });
      expect(r.status).to.equal(200);
    }
    const viaUrl = await eventually("the request event", async () => (await defaultEvents(byUrl.id))[0]);
    expect(viaUrl.event).to.deep.equal({ hi: "there" });
    expect(viaUrl.metadata.summary).to.equal("POST /hello");
    const viaUpload = await eventually("the uploaded source's event", async () => (await defaultEvents(uploaded.id))[0]);
    expect(viaUpload.event).to.deep.include({ method: "POST", path: "/hello", body: { hi: "there" } });

    const interval = await deployUrl("schedule/sources/custom-interval/custom-interval.mjs");
    expect(interval.configured_props.timer).to.deep.equal({ cron: null, interval_seconds: 900, timezone: null });
    await run(interval.id);
    expect((await defaultEvents(interval.id))[0].event).to.have.property("fired_at");
  });

  it("custom responses: string statuses and numeric header values from a spread common base", async () => {
    const source = await deployUrl("http/sources/custom-response/custom-response.mjs", { responseStatus: "201" });
    const r = await fetch(source.configured_props.httpInterface.endpoint_url, { method: "POST", body: "hello" });
    expect(r.status).to.equal(201);
    expect(r.headers.get("x-body-length")).to.equal("5");
    expect(r.headers.get("x-handled-by")).to.equal("headwater-compat");
    expect(await r.json()).to.deep.equal({ received: true });
    expect((await defaultEvents(source.id))[0].metadata.summary).to.equal("POST /");
  });

  it("a CommonJS source with this.db and process.env.PD_COMPONENT; an invalid respond without customResponse only warns", async () => {
    const cjs = await deployUrl("http_webhook/sources/new-requests-cjs/new-requests-cjs.js");
    for (const n of [1, 2]) {
      const r = await fetch(`${cjs.configured_props.httpInterface.endpoint_url}?n=${n}`);
      expect(r.status).to.equal(200);
      await eventually(`event ${n}`, async () => ((await defaultEvents(cjs.id)).length >= n ? true : undefined));
    }
    expect((await defaultEvents(cjs.id)).map((e) => e.event)).to.deep.equal([
      { count: 1, query: { n: "1" }, component: "1" },
      { count: 2, query: { n: "2" }, component: "1" },
    ]);

    const lenient = await deployUrl("http/sources/lenient-respond/lenient-respond.mjs");
    const r = await fetch(`${lenient.configured_props.httpInterface.endpoint_url}/p`);
    expect(r.status).to.equal(200);
    expect((await eventually("the event", async () => (await defaultEvents(lenient.id))[0])).event).to.deep.equal({ path: "/p" });
    const logs = await eventually("the run log", async () => {
      const l = (await admin.get(`/v1/sources/${lenient.id}/logs`)).body.data;
      return l.length > 0 ? l : undefined;
    });
    expect(JSON.stringify(logs)).to.match(/http\.respond/);
  });

  it("process, os and path report the sandbox: only the documented environment", async () => {
    const source = await deployUpload("schedule", "sources/env-report/env-report.mjs");
    await run(source.id);
    expect((await defaultEvents(source.id))[0].event).to.deep.equal({
      isComponent: true,
      envKeys: ["NODE_ENV", "PD_COMPONENT", "TMPDIR"],
      cwd: "/tmp",
      tmp: "/tmp",
      platform: "linux",
      joined: "/tmp/report.json",
      elapsedIsArray: true,
    });
  });

  for (const [name, parser] of [
    ["new-item-rss-parser", "rss-parser"],
    ["new-item-fast-xml", "fast-xml-parser"],
    ["new-item-feedparser", "feedparser"],
    ["new-item-gzip", "gzip+fast-xml-parser"],
    ["new-item-https-module", "https-module"],
  ] as const) {
    it(`feeds: ${name} parses a loopback feed and dedupes on the next run`, async () => {
      const feed = name === "new-item-gzip" ? "rss-gzip.xml" : "rss.xml";
      const source = await deployUrl(`rss/sources/${name}/${name}.mjs`, { url: `${receiver.url}/feeds/${feed}` });
      expect(source.configured_props).to.not.have.property("rss");
      await run(source.id);
      await run(source.id);
      const emitted = await defaultEvents(source.id);
      expect(emitted.map((e) => e.event.title)).to.deep.equal(TITLES);
      expect(emitted.every((e) => e.event.parser === parser)).to.equal(true);
    });
  }

  it("connected accounts: $auth from an account (by URL and by upload, ESM and TypeScript); inline $auth still works", async () => {
    const bound = await deployUrl("acme_crm/sources/new-contact/new-contact.mjs", { acme: { authProvisionId: acmeAccount }, listId: "l1" });
    expect(bound.configured_props.acme).to.deep.equal({ authProvisionId: acmeAccount });
    await run(bound.id);
    await run(bound.id);
    expect((await defaultEvents(bound.id)).map((e) => e.event.email)).to.deep.equal(["ada@example.test", "grace@example.test"]);

    const inline = await deployUpload("acme_crm", "sources/new-contact/new-contact.mjs", {
      acme: { $auth: { api_key: ACME_KEY, base_url: receiver.url } },
      listId: "l1",
    });
    expect(inline.configured_props.acme).to.equal("[redacted]");
    await run(inline.id);
    expect(await defaultEvents(inline.id)).to.have.length(2);

    const deals = await deployUpload("acme_crm", "sources/new-deal/new-deal.ts", { acme: { authProvisionId: acmeAccount } });
    await run(deals.id);
    expect((await defaultEvents(deals.id)).map((e) => e.event.title)).to.deep.equal(["Big"]);

    // Without credentials the app's code runs with $auth {} and the API refuses it: the run fails clearly.
    const unbound = await deployUrl("acme_crm/sources/new-deal/new-deal.ts");
    const failed = await admin.post(`/v1/sources/${unbound.id}/run`, {});
    expect(failed.body.data.ok).to.equal(false);
  });

  it("connected accounts: hooks register webhooks with the account; the instant source checks the key it was given", async () => {
    const source = await deployUrl("acme_crm/sources/new-contact-instant/new-contact-instant.mjs", {
      acme: { authProvisionId: acmeAccount },
    });
    const registered = await receiver.waitFor((r) => r.path === "/api/hooks" && r.method === "POST");
    expect(JSON.parse(registered[0].body)).to.deep.equal({ url: source.configured_props.http.endpoint_url });
    const denied = await fetch(source.configured_props.http.endpoint_url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "wrong" },
      body: JSON.stringify({ id: 1 }),
    });
    expect(denied.status).to.equal(401);
    const accepted = await fetch(source.configured_props.http.endpoint_url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ACME_KEY },
      body: JSON.stringify({ id: 2, email: "new@example.test" }),
    });
    expect(accepted.status).to.equal(200);
    expect(await accepted.text()).to.equal("ok");
    const events = await defaultEvents(source.id);
    expect(events.map((e) => e.event)).to.deep.equal([{ id: 2, email: "new@example.test" }]);
    expect(events[0].metadata.summary).to.equal("hook hook_1");
    expect((await admin.delete(`/v1/sources/${source.id}`)).status).to.equal(204);
    await receiver.waitFor((r) => r.path === "/api/hooks/hook_1" && r.method === "DELETE");
  });

  it("connected accounts: CommonJS app with an OAuth token, TypeScript defineSource, axios interceptors", async () => {
    const props = { octo: { authProvisionId: octoAccount }, repo: "acme/widgets" };
    const issues = await deployUrl("octo/sources/new-issue/new-issue.js", props);
    await run(issues.id);
    expect((await defaultEvents(issues.id)).map((e) => e.event.number)).to.deep.equal([11, 12]);
    const labeled = await deployUrl("octo/sources/new-issue-ts/new-issue-ts.ts", { ...props, label: "bug" });
    await run(labeled.id);
    expect((await defaultEvents(labeled.id)).map((e) => e.metadata.summary)).to.deep.equal(["#11 Crash on start"]);
    const stars = await deployUpload("octo", "sources/new-star-axios/new-star-axios.mjs", props);
    await run(stars.id);
    await run(stars.id);
    expect((await defaultEvents(stars.id)).map((e) => e.event.login)).to.deep.equal(["ada", "linus"]);
  });

  it("connected accounts: wrong app is a 400, another user's account a 404, a bound account cannot be deleted", async () => {
    const wrongApp = await admin.post("/v1/sources", {
      component_url: `${receiver.url}/components/octo/sources/new-issue/new-issue.js`,
      configured_props: { octo: { authProvisionId: acmeAccount }, repo: "acme/widgets" },
    });
    expect(wrongApp.status).to.equal(400);
    expect(wrongApp.body.error).to.match(/account of acme_crm, not of octo/);

    const other = server.cli("admin", "user", "create", "--username", "compat-other", "--email", "other@example.test");
    expect(other.status, other.stderr).to.equal(0);
    const stranger = server.client(other.json.api_key);
    const theirs = await stranger.post("/v1/sources", {
      component_url: `${receiver.url}/components/octo/sources/new-issue/new-issue.js`,
      configured_props: { octo: { authProvisionId: octoAccount }, repo: "acme/widgets" },
    });
    expect(theirs.status).to.equal(404);
    const unknown = await stranger.post("/v1/sources", {
      component_url: `${receiver.url}/components/octo/sources/new-issue/new-issue.js`,
      configured_props: { octo: { authProvisionId: "apn_doesnotexist000" }, repo: "acme/widgets" },
    });
    expect(unknown.status).to.equal(404);
    expect(theirs.body.error).to.equal(unknown.body.error.replace("apn_doesnotexist000", octoAccount));
    expect((await stranger.get(`/v1/accounts/${octoAccount}`)).status).to.equal(404);
    expect((await stranger.delete(`/v1/accounts/${octoAccount}`)).status).to.equal(404);

    const temporary = (await admin.post("/v1/accounts", { app: "octo", auth: { oauth_access_token: OCTO_TOKEN, base_url: receiver.url } }))
      .body.data.id;
    const user = await deployUrl("octo/sources/new-issue/new-issue.js", { octo: { authProvisionId: temporary }, repo: "acme/widgets" });
    const refused = await admin.delete(`/v1/accounts/${temporary}`);
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal("account_in_use");
    expect(refused.body.error).to.include(user.id);
    expect((await admin.delete(`/v1/sources/${user.id}`)).status).to.equal(204);
    expect((await admin.delete(`/v1/accounts/${temporary}`)).status).to.equal(204);
    expect((await admin.get(`/v1/accounts/${temporary}`)).status).to.equal(404);
  });

  it("accounts API and CLI: secrets never echoed, listings paginated", async () => {
    const secret = "cli-secret-" + crypto.randomBytes(4).toString("hex");
    const cli = (...args: string[]) => {
      const r = spawnSync(process.execPath, ["--no-node-snapshot", cliEntry, "account", ...args, "--json"], {
        env: { PATH: process.env.PATH ?? "", HOME: server.dataDir, HEADWATER_API_URL: server.url, HEADWATER_API_KEY: server.bootstrapKey },
        encoding: "utf8",
      });
      return { status: r.status, out: r.stdout, json: JSON.parse(r.status === 0 ? r.stdout : r.stderr) };
    };
    const created = cli("create", "--app", "toolbox", "--name", "from the cli", "--auth", JSON.stringify({ api_key: secret }));
    expect(created.status).to.equal(0);
    expect(created.out).to.not.include(secret);
    expect(created.json).to.deep.include({ app: "toolbox", name: "from the cli", auth_fields: ["api_key"] });
    expect(created.json.id).to.match(/^apn_/);
    const got = cli("get", created.json.id);
    expect(got.json.id).to.equal(created.json.id);
    expect(got.out).to.not.include(secret);
    const first = cli("list", "--limit", "1");
    expect(first.json.page_info.count).to.equal(1);
    expect(first.json.page_info.total_count).to.be.at.least(3);
    const second = cli("list", "--limit", "1", "--after", first.json.page_info.end_cursor);
    expect(second.json.data[0].id).to.not.equal(first.json.data[0].id);
    const all = await admin.get("/v1/users/me/accounts?limit=100");
    expect(JSON.stringify(all.body)).to.not.include(secret).and.not.include(ACME_KEY);
    const bad = cli("create", "--app", "toolbox", "--auth", "not json");
    expect(bad.status).to.equal(2);
    expect(bad.json.code).to.equal("usage");
    expect(cli("delete", created.json.id).json).to.deep.equal({ deleted: created.json.id });
    const gone = cli("get", created.json.id);
    expect(gone.status).to.equal(4);
    expect(gone.json.code).to.equal("not_found");
  });

  it("fs on the run's /tmp, zlib with streams, crypto, assert, util, events, url, querystring and timers", async () => {
    const roundtrip = await deployUrl("files/sources/tmp-roundtrip/tmp-roundtrip.mjs");
    await run(roundtrip.id, { n: 1 });
    await run(roundtrip.id, { n: 2 });
    const runs = (await defaultEvents(roundtrip.id)).map((e) => e.event);
    expect(runs[1]).to.deep.equal({
      leftover: false,
      stored: { run: 2 },
      notes: ["line one", "line two"],
      listing: ["state.json"],
      denied: "EACCES",
    });

    const streamed = await deployUpload("files", "sources/tmp-stream/tmp-stream.mjs");
    await run(streamed.id);
    expect((await defaultEvents(streamed.id))[0].event).to.deep.equal({ compressedSmaller: true, lines: 1000, last: "row 999" });

    const signer = await deployUrl("toolbox/sources/hash-and-sign/hash-and-sign.mjs", { secret: "s3cret" });
    const body = JSON.stringify({ order: 1 });
    const signature = crypto.createHmac("sha256", "s3cret").update(body).digest("hex");
    const endpoint = signer.configured_props.http.endpoint_url;
    const bad = await fetch(endpoint, { method: "POST", headers: { "x-signature": "nope" }, body });
    expect(bad.status).to.equal(401);
    const good = await fetch(endpoint, { method: "POST", headers: { "x-signature": signature, "content-type": "application/json" }, body });
    expect(good.status).to.equal(202);
    expect((await defaultEvents(signer.id))[0].event).to.deep.equal({
      body: { order: 1 },
      sha1: crypto.createHash("sha1").update(body).digest("base64"),
      nonce: 36,
    });

    const asserting = await deployUrl("toolbox/sources/assert-inputs/assert-inputs.cjs", { expected: { a: 1 } });
    await run(asserting.id, { a: 1 });
    await run(asserting.id, { a: 2 });
    expect((await defaultEvents(asserting.id)).map((e) => e.event)).to.deep.equal([
      { verdict: "valid", checked: true, slept: 2, formatted: "n=42" },
      { verdict: "ERR_ASSERTION", checked: true, slept: 2, formatted: "n=42" },
    ]);

    const compress = await deployUrl("toolbox/sources/compress-payload/compress-payload.mjs");
    await fetch(compress.configured_props.http.endpoint_url, { method: "POST", body: "squeeze me" });
    const packed = (await eventually("the compressed event", async () => (await defaultEvents(compress.id))[0])).event;
    expect(zlib.gunzipSync(Buffer.from(packed.packed, "base64")).toString()).to.equal("squeeze me");
    expect(packed).to.include({ roundTrip: true, rawInflated: true, at: 24 });

    const links = await deployUrl("toolbox/sources/url-and-querystring/url-and-querystring.mjs", {
      link: "https://example.test/a/b?q=1&tag=x",
    });
    await run(links.id);
    expect((await defaultEvents(links.id))[0].event).to.deep.equal({
      host: "example.test",
      path: "/a/b",
      query: { q: "1", tag: "x" },
      searchParams: { q: "1", tag: "x" },
      rebuilt: "q=1&tag=x&page=2",
      resolved: "https://example.test/up",
    });

    const lines = await deployUpload("toolbox", "sources/line-splitter/line-splitter.mjs");
    const split = await fetch(lines.configured_props.http.endpoint_url, { method: "POST", body: "alpha\nbeta\ngamma" });
    expect(split.status).to.equal(202);
    expect(split.headers.get("x-lines")).to.equal("3");
    expect((await defaultEvents(lines.id)).map((e) => e.event.line)).to.deep.equal(["alpha", "beta", "gamma"]);

    const timers = await deployUrl("toolbox/sources/timers-promises/timers-promises.mjs");
    await run(timers.id);
    expect((await defaultEvents(timers.id))[0].event).to.deep.equal({ value: "slept", immediate: "immediate", waited: true });

    const batches = await deployUrl("toolbox/sources/events-emitter/events-emitter.mjs");
    await run(batches.id);
    expect((await defaultEvents(batches.id)).map((e) => e.event.items)).to.deep.equal([
      ["a", "b"],
      ["c", "d"],
    ]);

    // The entry's default import of a CommonJS module flagged __esModule is its module.exports, as in Node.
    for (const legacy of [
      await deployUrl("toolbox/sources/legacy-client/legacy-client.mjs"),
      await deployUpload("toolbox", "sources/legacy-client/legacy-client.mjs"),
    ]) {
      await run(legacy.id);
      expect((await defaultEvents(legacy.id))[0].event).to.deep.equal({ described: "client in eu-west-1", version: "2.1.0" });
    }
  });

  it("an npm package imported without a version gets the range its app's package.json declares (by URL and uploaded), else the newest", async () => {
    const code = files.get("components/pinned_tools/sources/lodash-version/lodash-version.mjs")!;
    // First, while no lodash is cached (an unpinned import takes the newest cached version).
    const inline = await admin.post("/v1/sources", { component_code: code });
    expect(inline.status, JSON.stringify(inline.body)).to.equal(200);
    const byUrl = await deployUrl("pinned_tools/sources/lodash-version/lodash-version.mjs");
    const uploaded = await deployUpload("pinned_tools", "sources/lodash-version/lodash-version.mjs");
    const versions: string[] = [];
    for (const source of [byUrl, uploaded, inline.body.data]) {
      await run(source.id);
      const [emitted] = await defaultEvents(source.id);
      expect(emitted.event.chunked).to.deep.equal([[1, 2], [3]]);
      versions.push(emitted.event.lodash);
    }
    expect(versions.slice(0, 2), "the app's package.json pins 4.17.20").to.deep.equal(["4.17.20", "4.17.20"]);
    // Code sent alone has no package.json: the newest release.
    expect(versions[2]).to.match(/^4\.\d+\.\d+$/);
    expect(versions[2]).to.not.equal("4.17.20");
  });

  it("a dir prop (Pipedream's File Stash, optional as published sources declare it) deploys; using it says it is not available", async () => {
    const code = `export default {
      name: "Stash",
      version: "0.0.1",
      props: { timer: { type: "$.interface.timer", default: { intervalSeconds: 3600 } }, dir: { type: "dir", accessMode: "write", optional: true } },
      async run() {
        let message;
        try { await this.dir.open("a/b.txt"); } catch (err) { message = err.message; }
        this.$emit({ kind: typeof this.dir, message });
      },
    };`;
    const deployed = await admin.post("/v1/sources", { component_code: code });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    expect(deployed.body.data.configured_props).to.not.have.property("dir");
    await run(deployed.body.data.id);
    const [emitted] = await defaultEvents(deployed.body.data.id);
    expect(emitted.event).to.deep.equal({
      kind: "object",
      message:
        "this.dir.open(): dir props (Pipedream's File Stash) are not available in Headwater; write files to /tmp within the run instead",
    });
    const configured = await admin.post("/v1/sources", { component_code: code, configured_props: { dir: "/tmp/x" } });
    expect(configured.status).to.equal(400);
    expect(configured.body.details).to.deep.include({ path: "configured_props.dir", message: "a dir prop is not configurable" });
  });

  it("a SQL app spreading the platform's sqlProxy and sqlProp bases: new rows polled by id, the table's options from its schema", async () => {
    const account = await admin.post("/v1/accounts", {
      app: "ledger_db",
      auth: { token: LEDGER_TOKEN, base_url: `${receiver.url}/ledger` },
    });
    expect(account.status, JSON.stringify(account.body)).to.equal(200);
    const ledger = { authProvisionId: account.body.data.id };
    const source = await deployUrl("ledger_db/sources/new-row/new-row.mjs", { ledger, table: "payments" });
    expect(source.configured_props.timer).to.include({ interval_seconds: 900 });
    await run(source.id);
    ledgerRows.push({ id: 3, amount: 40, created_at: "2026-11-03T10:00:00Z" });
    await run(source.id);
    await run(source.id);
    const emitted = await defaultEvents(source.id);
    expect(emitted.map((e) => e.event.id)).to.deep.equal([1, 2, 3]);
    expect(emitted.map((e) => e.metadata.summary)).to.include("New row 3 in payments");
    expect(ledgerQueries.map((q) => q.params)).to.deep.equal([[0], [2], [3]]);
    expect(ledgerQueries[0].query).to.equal("SELECT * FROM payments WHERE id > ? ORDER BY id");
    const options = await admin.post(`/v1/components/${source.component_id}/props/table/options`, { configured_props: { ledger } });
    expect(options.status, JSON.stringify(options.body)).to.equal(200);
    expect(options.body.data.options.map((o: { value: string }) => o.value)).to.deep.equal(["payments", "refunds"]);
  });

  it("the platform's file helpers: a remote file streamed with its metadata and digested; a changed file emits again", async () => {
    const source = await deployUrl("files/sources/remote-file-digest/remote-file-digest.mjs", {
      url: `${receiver.url}/downloads/notes.txt`,
    });
    await run(source.id);
    await run(source.id);
    remoteFile = "second version, longer\n";
    await run(source.id);
    const emitted = await defaultEvents(source.id);
    const digest = (text: string) => crypto.createHash("sha256").update(text).digest("hex");
    expect(emitted.map((e) => e.event)).to.deep.equal([
      { size: 14, contentType: "text/plain", name: "notes.txt", etag: '"14"', bytes: 14, sha256: digest("first version\n") },
      { size: 23, contentType: "text/plain", name: "notes.txt", etag: '"23"', bytes: 23, sha256: digest("second version, longer\n") },
    ]);
  });

  it("every published fixture source saves through component_url", async () => {
    const entries = [...files.keys()].filter((p) => /\/sources\/(?!common\/)[^/]+\/[^/]+$/.test(p));
    expect(entries.length).to.be.at.least(25);
    for (const entry of entries) {
      const r = await admin.post("/v1/components", { component_url: `${receiver.url}/${entry}` });
      expect(r.status, `${entry}: ${JSON.stringify(r.body)}`).to.equal(200);
    }
  });
});
