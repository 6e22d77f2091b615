import { expect } from "chai";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { TestServer } from "../harness/server.js";
import { eventually } from "../harness/receiver.js";

// The embedded default on a disk that fills up: a data directory on a small tmpfs of its own,
// filled to the last byte by another file while the node runs. Writes and requests answer 503
// (nothing half-written), runs already queued wait, and once space is freed everything goes on:
// each acknowledged request runs exactly once, without a restart. Mounting needs root (as CI runs).

const slow = `export default {
  name: "Slow", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    this.$emit({ n: event.body.n, padding: "x".repeat(1000) });
  },
};`;

const isRoot = process.getuid?.() === 0;

describe("a full disk (embedded default, real tmpfs)", function () {
  this.timeout(120_000);
  if (!isRoot) {
    it("NOT RUN: mounting a tmpfs to fill needs root (CI runs as root)");
    return;
  }
  const mount = fs.mkdtempSync(path.join(os.tmpdir(), "hw-full-"));
  const filler = path.join(mount, "filler");
  let server: TestServer;

  before(async () => {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=40m", "tmpfs", mount]);
    server = new TestServer({ dataDir: path.join(mount, "data") });
    fs.mkdirSync(server.dataDir);
    await server.start();
  });

  after(async () => {
    await server?.stop();
    execFileSync("umount", [mount]);
    fs.rmSync(mount, { recursive: true, force: true });
  });

  const fill = () => {
    // Until the file system refuses: dd stops with ENOSPC (exit status 1), every block taken.
    try {
      execFileSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=1M", "count=100"], { stdio: "ignore" });
    } catch {
      // the expected ENOSPC
    }
    expect(fs.statfsSync(mount).bavail, "the disk is full").to.equal(0);
  };

  it("answers 503 while the disk is full, loses nothing acknowledged, and goes on once space is freed", async () => {
    const admin = server.client();
    const deployed = await admin.post("/v1/sources", { component_code: slow, name: "slow" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const hit = (n: number) =>
      fetch(source.configured_props.http.endpoint_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ n }),
      });
    // Ten requests queued; their runs (300 ms each) are still going when the disk fills.
    for (let n = 1; n <= 10; n++) expect((await hit(n)).status).to.equal(200);
    fill();

    const refused = await hit(11);
    expect(refused.status).to.equal(503);
    expect(Number(refused.headers.get("retry-after"))).to.be.greaterThan(0);
    const write = await admin.post("/v1/sources", { component_code: slow, name: "during" });
    expect(write.status, JSON.stringify(write.body)).to.equal(503);
    expect(write.body).to.deep.include({ code: "unavailable" });
    expect((await fetch(`${server.url}/healthz`)).status, "the node stays up").to.equal(200);

    fs.rmSync(filler);
    const after = await eventually(
      async () => {
        const r = await admin.post("/v1/sources", { component_code: slow, name: "after" });
        return r.status === 200 ? r : undefined;
      },
      30_000,
      "a write taken once space was freed",
    );
    expect(after.body.data.name).to.equal("after");
    expect((await hit(12)).status).to.equal(200);
    const names = (await admin.get("/v1/users/me/sources?limit=100")).body.data.map((s: { name: string }) => s.name);
    expect(names.sort(), "the refused deploy left nothing").to.deep.equal(["after", "slow"]);
    const expected = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12];
    const ran = await eventually(
      async () => {
        const listed = (await admin.get(`/v1/sources/${source.id}/event_summaries?limit=100&expand=event`)).body.data as {
          event: { n: number };
        }[];
        return listed.length >= expected.length ? listed.map((e) => e.event.n) : undefined;
      },
      60_000,
      "every acknowledged request's run",
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const final = (await admin.get(`/v1/sources/${source.id}/event_summaries?limit=100&expand=event`)).body.data.map(
      (e: { event: { n: number } }) => e.event.n,
    );
    expect(final.length).to.equal(ran.length);
    expect(
      final.sort((a: number, b: number) => a - b),
      "each acknowledged request ran exactly once",
    ).to.deep.equal(expected);
  });
});
