import { expect } from "chai";
import { TestServer, type ApiClient, type ApiResponse } from "../harness/server.js";

// The API conventions of the core issue, over real HTTP against the real server process.

describe("API conventions (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer();
  let admin: ApiClient;

  before(async () => {
    await server.start();
    admin = server.client();
  });
  after(() => server.stop());

  describe("authentication", () => {
    it("answers 401 with an error body when the header is missing", async () => {
      const r = await server.anonymous().get("/v1/users/me");
      expect(r.status).to.equal(401);
      expect(r.body).to.include({ code: "unauthorized" });
      expect(r.body.error)
        .to.be.a("string")
        .and.match(/Authorization/);
      expect(r.headers.get("www-authenticate")).to.match(/^Bearer/);
    });

    it("answers 401 for a malformed header", async () => {
      for (const header of ["Token abc", "Bearer", "Bearer a b", "Basic dXNlcjpwYXNz"]) {
        const r = await server.anonymous().get("/v1/users/me", { authorization: header });
        expect(r.status, header).to.equal(401);
        expect(r.body.code, header).to.equal("unauthorized");
      }
    });

    it("answers 401 for an unknown key", async () => {
      const r = await server.client("hw_" + "x".repeat(40)).get("/v1/users/me");
      expect(r.status).to.equal(401);
      expect(r.body).to.deep.equal({ error: "the API key is unknown or revoked", code: "unauthorized" });
    });

    it("marks every API answer nosniff, errors and unmatched paths included, so no JSON is ever read as a page", async () => {
      const answers = [
        await server.anonymous().get("/v1/users/me"),
        await admin.get("/v1/users/me"),
        await admin.get("/v1/no-such-route%3Cscript%3E"),
        await server.anonymous().get("/dashboard/no-such-file.js"),
      ];
      for (const r of answers) expect(r.headers.get("x-content-type-options"), String(r.status)).to.equal("nosniff");
    });

    it("answers 404, not 401, for a dashboard file that does not exist", async () => {
      const r = await server.anonymous().get("/dashboard/no-such-file.js");
      expect(r.status).to.equal(404);
      expect(r.body).to.include({ code: "not_found" });
      expect((await server.anonymous().get("/dashboard/app.js")).status).to.equal(200);
    });

    it("a key created by the operator CLI works at once, and a revoked one stops working", async () => {
      const created = server.cli("admin", "user", "create", "--username", "cli-user", "--email", "cli@example.com");
      expect(created.status, created.stderr).to.equal(0);
      expect(created.json.id).to.match(/^u_/);
      const client = server.client(created.json.api_key);
      expect((await client.get("/v1/users/me")).body.data.id).to.equal(created.json.id);

      const second = server.cli("admin", "key", "create", created.json.id);
      expect(second.status, second.stderr).to.equal(0);
      const revoked = server.cli("admin", "key", "revoke", created.json.api_key);
      expect(revoked.status, revoked.stderr).to.equal(0);
      expect(revoked.json).to.include({ revoked: true });

      let status = 200;
      for (let i = 0; i < 50 && status === 200; i++) {
        status = (await client.get("/v1/users/me")).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status, "the revoked key must stop working").to.equal(401);
      expect((await server.client(second.json.api_key).get("/v1/users/me")).status).to.equal(200);
    });

    it("serves the OpenAPI document without a key, generated from the request schemas", async () => {
      const r = await server.anonymous().get("/v1/openapi.json");
      expect(r.status).to.equal(200);
      expect(r.body.openapi).to.equal("3.1.0");
      const list = r.body.paths["/v1/users/me/api_keys"].get;
      const limit = list.parameters.find((p: { name: string }) => p.name === "limit");
      expect(limit.schema).to.include({ minimum: 1, maximum: 100, default: 10 });
      expect(r.body.paths["/v1/users/me"].get.responses["200"]).to.have.property("content");
    });
  });

  describe("request errors", () => {
    it("415 for a body that is not JSON", async () => {
      const r = await admin.post("/v1/users/me/api_keys", "name=x", { "content-type": "application/x-www-form-urlencoded" });
      expect(r.status).to.equal(415);
      expect(r.body.code).to.equal("unsupported_media_type");
    });

    it("400 for malformed JSON", async () => {
      const r = await admin.post("/v1/users/me/api_keys", '{"name": ', { "content-type": "application/json" });
      expect(r.status).to.equal(400);
      expect(r.body.code).to.equal("malformed_json");
    });

    it("400 for a JSON body that is not an object (null, a string, an array), and nothing is written", async () => {
      const before = (await admin.get("/v1/users/me/api_keys")).body.page_info.total_count;
      for (const text of ["null", '"x"', "[]", "5"]) {
        const r = await admin.post("/v1/users/me/api_keys", text, { "content-type": "application/json" });
        expect(r.status, text).to.equal(400);
        expect(r.body.code, text).to.equal("invalid_request");
        expect(r.body.error, text).to.equal("the request body must be a JSON object");
      }
      expect((await admin.get("/v1/users/me/api_keys")).body.page_info.total_count).to.equal(before);
    });

    it("400 for a string holding a lone surrogate (stored as U+FFFD before), and nothing is written", async () => {
      const before = (await admin.get("/v1/users/me/webhooks")).body.page_info.total_count;
      for (const [text, path] of [
        ['{"url": "https://example.com/", "name": "a\\ud800b"}', "body.name"],
        ['{"url": "https://example.com/", "description": "\\udc00"}', "body.description"],
      ]) {
        const r = await admin.post("/v1/webhooks", text, { "content-type": "application/json" });
        expect(r.status, text).to.equal(400);
        expect(r.body.code, text).to.equal("malformed_json");
        expect(r.body.details, text).to.deep.equal([{ path, message: "holds a lone surrogate" }]);
      }
      expect((await admin.get("/v1/users/me/webhooks")).body.page_info.total_count).to.equal(before);
      // A whole pair (an escaped emoji) is a character like any other.
      const pair = await admin.post("/v1/webhooks", '{"url": "https://example.com/", "name": "\\ud83c\\udf89"}', {
        "content-type": "application/json",
      });
      expect(pair.status, JSON.stringify(pair.body)).to.equal(200);
      expect(pair.body.data.name).to.equal("🎉");
    });

    it("400 for a blank name (only white space) of a source, webhook or account, and nothing is written", async () => {
      const counts = async () =>
        Promise.all(
          ["/v1/users/me/webhooks", "/v1/users/me/sources", "/v1/users/me/accounts"].map(
            async (p) => (await admin.get(p)).body.page_info.total_count,
          ),
        );
      const before = await counts();
      const blank = [
        ["/v1/webhooks", { url: "https://example.com/", name: "   " }],
        ["/v1/webhooks", { url: "https://example.com/", name: "" }],
        ["/v1/sources", { component_code: "export default { name: 'x', version: '1', async run() {} };", name: " \t\n " }],
        ["/v1/accounts", { app: "acme", name: "\u00a0 ", auth: { api_key: "k" } }],
      ] as const;
      for (const [path, body] of blank) {
        const r = await admin.post(path, body);
        expect(r.status, `${path} ${JSON.stringify(body)}`).to.equal(400);
        expect(r.body.details, path).to.deep.include({ path: "body.name", message: "must not be blank" });
      }
      expect(await counts()).to.deep.equal(before);
      // Renaming to a blank name is refused too; a name with other characters around spaces is fine.
      const hook = await admin.post("/v1/webhooks", { url: "https://example.com/", name: "  spaced  name " });
      expect(hook.status, JSON.stringify(hook.body)).to.equal(200);
      expect(hook.body.data.name).to.equal("  spaced  name ");
      const rename = await admin.request("PUT", `/v1/webhooks/${hook.body.data.id}`, { name: " " });
      expect(rename.status).to.equal(400);
      expect(rename.body.details).to.deep.include({ path: "body.name", message: "must not be blank" });
    });

    it("400 listing every invalid field", async () => {
      const r = await admin.post("/v1/users/me/api_keys", { name: 5, colour: "red" });
      expect(r.status).to.equal(400);
      expect(r.body.code).to.equal("invalid_request");
      const paths = r.body.details.map((d: { path: string }) => d.path);
      expect(paths).to.have.members(["body.name", "body.colour"]);
    });

    it("413 for a body over the limit, and nothing is written", async () => {
      const before = (await admin.get("/v1/users/me/api_keys")).body.page_info.total_count;
      const r = await admin.post("/v1/users/me/api_keys", { name: "x".repeat(2 * 1024 * 1024) });
      expect(r.status).to.equal(413);
      expect(r.body.code).to.equal("payload_too_large");
      expect((await admin.get("/v1/users/me/api_keys")).body.page_info.total_count).to.equal(before);
    });

    it("400 for a bad limit, naming it", async () => {
      for (const limit of ["0", "101", "abc", "1.5"]) {
        const r = await admin.get(`/v1/users/me/api_keys?limit=${limit}`);
        expect(r.status, limit).to.equal(400);
        expect(r.body.details[0].path, limit).to.equal("query.limit");
      }
    });

    it("400 for a query parameter given more than once, saying so", async () => {
      for (const query of ["limit=1&limit=2", "after=a&after=b", "include=id&include=name"]) {
        const r = await admin.get(`/v1/users/me/api_keys?${query}`);
        expect(r.status, query).to.equal(400);
        const name = query.split("=")[0];
        expect(r.body.details, query).to.deep.equal([{ path: `query.${name}`, message: "is given more than once" }]);
        expect(r.body.error, query).to.equal(`query.${name} is given more than once`);
      }
    });

    it("400 for a cursor the service did not issue", async () => {
      const r = await admin.get("/v1/users/me/api_keys?after=not-a-cursor");
      expect(r.status).to.equal(400);
      expect(r.body.details[0].path).to.equal("query.after");
    });

    it("404 with an error body for unknown routes, 405 for a wrong method", async () => {
      const missing = await admin.get("/v1/nothing-here");
      expect(missing.status).to.equal(404);
      expect(missing.body.code).to.equal("not_found");
      const wrong = await admin.put("/v1/users/me", {});
      expect(wrong.status).to.equal(405);
      expect(wrong.body.code).to.equal("method_not_allowed");
    });
  });

  describe("users and organizations", () => {
    it("GET /users/me has the free-plan shape for a free user", async () => {
      const u = server.cli("admin", "user", "create", "--username", "freebie", "--email", "free@example.com");
      const r = await server.client(u.json.api_key).get("/v1/users/me");
      expect(r.status).to.equal(200);
      expect(r.body.data).to.deep.equal({
        id: u.json.id,
        username: "freebie",
        email: "free@example.com",
        orgs: [],
        daily_compute_time_quota: 1_800_000,
        daily_compute_time_used: 0,
        daily_invocations_quota: 10_000,
        daily_invocations_used: 0,
      });
    });

    it("GET /users/me has the paid-plan shape with the current billing period", async () => {
      const u = server.cli("admin", "user", "create", "--username", "payer", "--email", "pay@example.com", "--plan", "paid");
      const r = await server.client(u.json.api_key).get("/v1/users/me");
      const data = r.body.data;
      expect(data).to.not.have.property("daily_invocations_quota");
      expect(data.billing_period_invocations).to.equal(0);
      const now = Date.now() / 1000;
      expect(data.billing_period_start_ts).to.be.at.most(now);
      expect(data.billing_period_end_ts).to.be.greaterThan(now);
      expect(data.billing_period_end_ts - data.billing_period_start_ts).to.be.within(28 * 86400, 31 * 86400);
    });

    it("organizations: members see the org, others get 404 as for an unknown id", async () => {
      const owner = server.cli("admin", "user", "create", "--username", "owner1", "--email", "o1@example.com");
      const member = server.cli("admin", "user", "create", "--username", "member1", "--email", "m1@example.com");
      const stranger = server.cli("admin", "user", "create", "--username", "stranger1", "--email", "s1@example.com");
      const org = server.cli("admin", "org", "create", "--name", "Acme Widgets", "--owner", owner.json.id, "--email", "ops@acme.test");
      expect(org.status, org.stderr).to.equal(0);
      expect(org.json).to.include({ name: "Acme Widgets", orgname: "acme-widgets", email: "ops@acme.test" });
      expect(server.cli("admin", "org", "add-member", org.json.id, member.json.id).status).to.equal(0);

      const expected = { id: org.json.id, name: "Acme Widgets", orgname: "acme-widgets", email: "ops@acme.test" };
      expect((await server.client(member.json.api_key).get("/v1/users/me")).body.data.orgs).to.deep.equal([expected]);
      expect((await server.client(owner.json.api_key).get(`/v1/orgs/${org.json.id}`)).body.data).to.deep.equal(expected);
      expect((await server.client(member.json.api_key).get(`/v1/orgs/${org.json.id}`)).status).to.equal(200);

      const foreign = await server.client(stranger.json.api_key).get(`/v1/orgs/${org.json.id}`);
      const unknown = await server.client(stranger.json.api_key).get("/v1/orgs/o_doesnotexist0000");
      expect(foreign.status).to.equal(404);
      expect(foreign.body).to.deep.equal(unknown.body);
    });

    it("a parameter sent in both the query string and the body must agree: 400 naming it, nothing written", async () => {
      const user = server.cli("admin", "user", "create", "--username", "twoorgs", "--email", "two@example.com");
      const first = server.cli("admin", "org", "create", "--name", "First Org", "--owner", user.json.id).json.id as string;
      const second = server.cli("admin", "org", "create", "--name", "Second Org", "--owner", user.json.id).json.id as string;
      const client = server.client(user.json.api_key);
      const counts = async () =>
        Promise.all(
          [`/v1/orgs/${first}/sources`, `/v1/orgs/${second}/sources`, "/v1/users/me/sources", "/v1/users/me/webhooks"].map(
            async (path) => (await client.get(path)).body.page_info.total_count as number,
          ),
        );
      const before = await counts();

      const source = await client.post(`/v1/sources?org_id=${first}`, { key: "http-new-requests", org_id: second });
      expect(source.status, JSON.stringify(source.body)).to.equal(400);
      expect(source.body).to.deep.include({ code: "invalid_request" });
      expect(source.body.details).to.deep.equal([{ path: "query.org_id", message: "differs from body.org_id" }]);
      const webhook = await client.post("/v1/webhooks?url=https://query.example.com/", { url: "https://body.example.com/" });
      expect(webhook.status, JSON.stringify(webhook.body)).to.equal(400);
      expect(webhook.body.details).to.deep.equal([{ path: "query.url", message: "differs from body.url" }]);
      expect(await counts(), "nothing was created").to.deep.equal(before);

      // The same value in both places is one value.
      const agreeing = await client.post(`/v1/sources?org_id=${second}`, { key: "http-new-requests", org_id: second });
      expect(agreeing.status, JSON.stringify(agreeing.body)).to.equal(200);
      expect((await client.get(`/v1/orgs/${second}/sources`)).body.data.map((s: { id: string }) => s.id)).to.deep.equal([
        agreeing.body.data.id,
      ]);
    });

    it("the CLI refuses duplicate usernames and unknown users with a JSON error", async () => {
      const again = server.cli("admin", "user", "create", "--username", "freebie", "--email", "x@example.com");
      expect(again.status).to.equal(1);
      expect(again.json.code).to.equal("name_taken");
      const unknown = server.cli("admin", "key", "create", "u_nobody000000000");
      expect(unknown.status).to.equal(1);
      expect(unknown.json.code).to.equal("not_found");
    });

    it("one account per email: a second user with the same address (in any case) is refused and holds nothing", async () => {
      const taken = server.cli("admin", "user", "create", "--username", "freebie-two", "--email", "Free@Example.COM");
      expect(taken.status, taken.stderr).to.equal(1);
      expect(taken.json).to.include({ code: "name_taken" });
      expect(taken.json.error).to.contain("free@example.com");
      // The refused create gave its username back: it can be taken at once with a free address.
      const retried = server.cli("admin", "user", "create", "--username", "freebie-two", "--email", "free2@example.com");
      expect(retried.status, retried.stderr).to.equal(0);
      const users = server.cli("admin", "user", "list").json as { username: string; email: string }[];
      expect(users.filter((u) => u.email.toLowerCase() === "free@example.com").map((u) => u.username)).to.deep.equal(["freebie"]);
      expect(users.filter((u) => u.username === "freebie-two").map((u) => u.email)).to.deep.equal(["free2@example.com"]);
    });

    it("audit prints a resource's history event by event", async () => {
      const u = server.cli("admin", "user", "create", "--username", "audited", "--email", "a@example.com");
      server.cli("admin", "user", "set-plan", u.json.id, "--plan", "paid");
      const audit = server.cli("audit", u.json.id);
      expect(audit.status, audit.stderr).to.equal(0);
      expect(audit.json.stream).to.equal(`user-${u.json.id}`);
      expect(audit.json.events.map((e: { type: string }) => e.type)).to.deep.equal(["UserCreated", "UserPlanChanged"]);
      expect(audit.json.events[1].data).to.include({ plan: "paid" });
      expect(audit.json.events[0].metadata).to.deep.equal({ by: "operator-cli" });
    });
  });

  describe("pagination and fields", () => {
    let client: ApiClient;
    const created: string[] = [];

    before(async function () {
      this.timeout(120_000);
      const u = server.cli("admin", "user", "create", "--username", "pager", "--email", "p@example.com");
      client = server.client(u.json.api_key);
      const first = await client.get("/v1/users/me/api_keys");
      created.push(first.body.data[0].id);
      for (let i = 0; i < 249; i++) {
        const r = await client.post("/v1/users/me/api_keys", { name: `key ${i}` });
        expect(r.status).to.equal(200);
        created.push(r.body.data.id);
      }
    });

    it("walks forward and back across 250 items with no gaps or repeats", async () => {
      const forward: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r: ApiResponse = await client.get(`/v1/users/me/api_keys?limit=23${cursor ? `&after=${cursor}` : ""}`);
        expect(r.status).to.equal(200);
        expect(r.body.page_info.total_count).to.equal(250);
        expect(r.body.page_info.count).to.equal(r.body.data.length);
        forward.push(...r.body.data.map((k: { id: string }) => k.id));
        cursor = r.body.data.length > 0 ? r.body.page_info.end_cursor : null;
        pages++;
      } while (cursor && pages < 50);
      expect(forward).to.deep.equal(created);

      // Walk back with `before`, starting from the last item's cursor (the last forward end_cursor).
      let lastPage = await client.get("/v1/users/me/api_keys?limit=100");
      for (let i = 0; i < 2; i++)
        lastPage = await client.get(`/v1/users/me/api_keys?limit=100&after=${lastPage.body.page_info.end_cursor}`);
      expect(lastPage.body.data).to.have.length(50);
      const backward: string[] = [lastPage.body.data[49].id];
      let before: string | null = lastPage.body.page_info.end_cursor;
      while (before) {
        const r = await client.get(`/v1/users/me/api_keys?limit=17&before=${before}`);
        backward.unshift(...r.body.data.map((k: { id: string }) => k.id));
        before = r.body.data.length > 0 ? r.body.page_info.start_cursor : null;
      }
      expect(backward).to.deep.equal(created);
    });

    it("include and exclude pick the fields of each item", async () => {
      const included = await client.get("/v1/users/me/api_keys?limit=3&include=id,name");
      expect(included.body.data).to.have.length(3);
      for (const item of included.body.data) expect(Object.keys(item)).to.have.members(["id", "name"]);
      const excluded = await client.get("/v1/users/me/api_keys?limit=3&exclude=name");
      for (const item of excluded.body.data) expect(Object.keys(item)).to.have.members(["id", "created_at"]);
      const me = await client.get("/v1/users/me?include=username");
      expect(me.body.data).to.deep.equal({ username: "pager" });
      const unknown = await client.get("/v1/users/me?include=nope");
      expect(unknown.status).to.equal(400);
      expect(unknown.body.details[0]).to.deep.include({ path: "include" });
    });
  });
});
