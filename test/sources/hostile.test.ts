import { expect } from "chai";
import { TestServer } from "../harness/server.js";

// Hostile component code through the real server: each run fails cleanly, the server keeps answering.
const hostile: Record<string, string> = {
  "infinite loop": "for (;;) {}",
  "never-settling promise": "await new Promise(() => {});",
  "memory bomb": "const hog = []; for (;;) hog.push(new Array(1e6).fill(Math.random()));",
  // The global process is the sandbox's: no host environment, no bindings.
  "process escape":
    "const p = this.constructor.constructor('return process')(); if (p.env.PATH || p.env.HEADWATER_BOOTSTRAP_KEY) throw new Error('leaked'); p.binding('spawn_sync');",
  "require of a computed name":
    "const name = ['f', 's'].join(''); const fs = require(name); this.$emit(fs.readFileSync('/etc/passwd', 'utf8'));",
  "prototype tampering": "Object.prototype.polluted = 1; this.$emit.constructor('return process')().exit(1);",
  "deep recursion": "const f = (n) => f(n + 1) + 1; f(0);",
};

describe("sources: hostile code (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({ env: { HEADWATER_RUN_TIMEOUT_MS: "3000", HEADWATER_RUN_MEMORY_MB: "64" } });

  before(() => server.start());
  after(() => server.stop());

  it("a static import of child_process fails the save with a 400 naming it; fs reaches only the run's /tmp", async () => {
    const admin = server.client();
    const r = await admin.post("/v1/sources", {
      component_code: `import { execSync } from "child_process"; export default { name: "cp", version: "1", props: { http: "$.interface.http" }, async run() { this.$emit(execSync("id").toString()); } };`,
    });
    expect(r.status).to.equal(400);
    expect(r.body.details[0].message).to.include(`"child_process"`);
    const files = await admin.post("/v1/sources", {
      component_code: `import fs from "fs"; export default { name: "fs", version: "1", props: { http: "$.interface.http" }, async run() { this.$emit(fs.readFileSync("/etc/passwd", "utf8")); } };`,
    });
    expect(files.status, JSON.stringify(files.body)).to.equal(200);
    const outcome = (await admin.post(`/v1/sources/${files.body.data.id}/run`, {})).body.data;
    expect(outcome.ok).to.equal(false);
    expect(outcome.error.message).to.match(/^EACCES: permission denied, open '\/etc\/passwd'/);
    expect(JSON.stringify(outcome)).to.not.match(/root:x:0:0/);
  });

  for (const [name, body] of Object.entries(hostile)) {
    it(`${name}: the run fails with an error while the API keeps answering`, async () => {
      const admin = server.client();
      const created = await admin.post("/v1/sources", {
        component_code: `export default { name: ${JSON.stringify(name)}, version: "1", props: { http: "$.interface.http" }, async run() { ${body} } };`,
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      const id = created.body.data.id;
      const running = admin.post(`/v1/sources/${id}/run`, {});
      // While the hostile run is in flight, other requests are served promptly.
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        expect((await admin.get("/v1/users/me")).status).to.equal(200);
        expect(Date.now() - started, "the API stays responsive").to.be.below(1500);
      }
      const outcome = (await running).body.data;
      expect(outcome.ok, JSON.stringify(outcome)).to.equal(false);
      expect(outcome.error.message).to.be.a("string").and.not.equal("");
      expect(JSON.stringify(outcome)).to.not.match(/root:x:0:0|HEADWATER_BOOTSTRAP_KEY/);
      const [error] = (await admin.get(`/v1/sources/${id}/event_summaries?event_name=$errors&expand=event`)).body.data;
      expect(error.event.error.message).to.equal(outcome.error.message);
      // And afterwards a well-behaved source still runs.
      const ok = await admin.post("/v1/sources", {
        component_code: `export default { name: "ok", version: "1", props: { http: "$.interface.http" }, async run() { this.$emit("fine"); } };`,
      });
      expect((await admin.post(`/v1/sources/${ok.body.data.id}/run`, {})).body.data.ok).to.equal(true);
    });
  }
});
