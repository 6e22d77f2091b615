import { expect } from "chai";
import fs from "node:fs";
import path from "node:path";
import { TestServer, type ApiClient } from "../harness/server.js";

async function allKeys(client: ApiClient): Promise<string[]> {
  const ids: string[] = [];
  let after = "";
  for (;;) {
    const r = await client.get(`/v1/users/me/api_keys?limit=100${after}`);
    if (r.body.data.length === 0) return ids;
    ids.push(...r.body.data.map((k: { id: string }) => k.id));
    after = `&after=${r.body.page_info.end_cursor}`;
  }
}

describe("durability and replay (real server)", function () {
  this.timeout(120_000);

  it("a SIGKILL during a burst of writes loses no acknowledged write", async () => {
    const server = new TestServer();
    await server.start();
    const client = server.client();
    const acknowledged: string[] = [];
    let killed = false;
    const writer = async () => {
      while (!killed) {
        try {
          const r = await client.post("/v1/users/me/api_keys", { name: "burst" });
          if (r.status === 200 && !killed) acknowledged.push(r.body.data.id);
        } catch {
          return; // the connection died with the server
        }
      }
    };
    const writers = Array.from({ length: 8 }, writer);
    while (acknowledged.length < 80) await new Promise((r) => setTimeout(r, 5));
    killed = true;
    await server.kill();
    await Promise.all(writers);

    await server.start();
    const listed = new Set(await allKeys(server.client()));
    const missing = acknowledged.filter((id) => !listed.has(id));
    expect(missing, "acknowledged writes missing after restart").to.deep.equal([]);
    await server.stop();
  });

  it("rebuilding the read models from the log gives identical API responses", async () => {
    const server = new TestServer();
    await server.start();
    const ids: Record<string, { id: string; api_key: string }> = {};
    for (const name of ["ann", "bob", "cid"]) {
      ids[name] = server.cli("admin", "user", "create", "--username", name, "--email", `${name}@example.com`).json;
    }
    server.cli("admin", "user", "set-plan", ids.bob.id, "--plan", "paid");
    const org = server.cli("admin", "org", "create", "--name", "Replay Org", "--owner", ids.ann.id).json;
    server.cli("admin", "org", "add-member", org.id, ids.bob.id);
    for (let i = 0; i < 30; i++) await server.client(ids.cid.api_key).post("/v1/users/me/api_keys", { name: `k${i}` });
    const spare = (await server.client(ids.cid.api_key).post("/v1/users/me/api_keys", {})).body.data;
    await server.client(ids.cid.api_key).delete(`/v1/users/me/api_keys/${spare.id}`);

    const snapshot = async () => {
      const out: Record<string, unknown> = {};
      for (const [name, user] of Object.entries(ids)) {
        const c = server.client(user.api_key);
        out[`${name} me`] = (await c.get("/v1/users/me")).body;
        out[`${name} keys`] = await allKeys(c);
        out[`${name} page`] = (await c.get("/v1/users/me/api_keys?limit=7")).body;
        out[`${name} org`] = await c.get(`/v1/orgs/${org.id}`).then((r) => [r.status, r.body]);
      }
      return out;
    };
    const before = await snapshot();
    await server.stop();

    const rebuilt = server.cli("projections", "rebuild");
    expect(rebuilt.status, rebuilt.stderr).to.equal(0);
    expect(rebuilt.json.rebuilt).to.include("api_keys");
    expect(rebuilt.json.parked, "nothing parked").to.equal(0);
    await server.start();
    expect(await snapshot()).to.deep.equal(before);
    await server.stop();

    // Losing the read-model file entirely is the same: the log is the source of truth.
    for (const f of fs.readdirSync(server.dataDir)) if (f.startsWith("readmodels.db")) fs.rmSync(path.join(server.dataDir, f));
    await server.start();
    expect(await snapshot()).to.deep.equal(before);
    await server.stop();
  });

  it("projections rebuild refuses to run beside a live server", async () => {
    const server = new TestServer();
    await server.start();
    const r = server.cli("projections", "rebuild");
    expect(r.status).to.equal(1);
    expect(r.json.error).to.match(/stop it first/);
    await server.stop();
  });
});
