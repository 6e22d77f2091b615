import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { loadConfig } from "../../src/config.js";
import { deploy, eventually, events } from "./sourcesSupport.js";

// this.db's bound per source is the operator's (HEADWATER_DB_MAX_BYTES, 60 KB by default): a
// source that keeps a table snapshot there (baserow's new-or-updated-row) needs more. Real server.

const SNAPSHOT = `export default {
  name: "Snapshot",
  version: "0.0.1",
  props: { http: "$.interface.http", db: "$.service.db" },
  async run(event) {
    const size = event.body.size;
    let refused = null;
    if (size) {
      try { this.db.set("rows", "x".repeat(size)); } catch (e) { refused = e.message; }
    }
    this.$emit({ kept: (this.db.get("rows") ?? "").length, refused });
  },
};`;

describe("sources: this.db's bound is the operator's (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_DB_MAX_BYTES: String(128 * 1024) } });
  let admin: ApiClient;
  before(async () => {
    await server.start();
    admin = server.client();
  });
  after(() => server.stop());

  it("keeps 100 KB in this.db with HEADWATER_DB_MAX_BYTES=131072, across runs, and refuses past it", async () => {
    const source = await deploy(admin, SNAPSHOT, {}, "snapshot");
    const endpoint = source.configured_props.http.endpoint_url as string;
    const post = (body: unknown) =>
      fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post({ size: 100_000 })).status).to.equal(200);
    expect((await post({})).status).to.equal(200);
    expect((await post({ size: 200_000 })).status).to.equal(200);
    const list = await eventually("three events", async () => {
      const got = await events(admin, source.id);
      return got.length >= 3 ? got : undefined;
    });
    expect(list.map((e) => e.event.kept)).to.deep.equal([100_000, 100_000, 100_000]);
    expect(list[0].event.refused).to.equal(null);
    expect(list[2].event.refused).to.include(`over the limit of ${128 * 1024} bytes`);
  });

  it("is read at start: a value outside 1 KB to 8 MB is refused, naming the variable", () => {
    expect(loadConfig({ HEADWATER_DB_MAX_BYTES: "131072" }).runtime).to.deep.include({ limits: { maxDbBytes: 131_072 } });
    for (const value of ["100", String(9 * 1024 * 1024), "lots"]) {
      expect(() => loadConfig({ HEADWATER_DB_MAX_BYTES: value }), value).to.throw(/HEADWATER_DB_MAX_BYTES/);
    }
  });
});
