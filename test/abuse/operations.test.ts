import { expect } from "chai";
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { TestServer, cliEntry } from "../harness/server.js";
import { deploy, events, sleep } from "../sources/sourcesSupport.js";

// Operating a node: one node per data directory, and a SIGTERM that lets work in flight finish.

describe("operations: data directory lock and graceful stop (real server)", function () {
  this.timeout(90_000);

  it("refuses a second node and a projections rebuild on a data directory in use, and leaves the first one's pid file", async () => {
    const first = new TestServer();
    await first.start();
    try {
      const pidFile = path.join(first.dataDir, "headwater.pid");
      expect(fs.readFileSync(pidFile, "utf8")).to.equal(String(first.pid));
      const second = spawnSync(process.execPath, ["--no-node-snapshot", cliEntry, "start"], {
        env: first.env,
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(second.status, second.stderr).to.equal(1);
      const error = JSON.parse(second.stderr.trim().split("\n").pop()!) as { code: string; error: string };
      expect(error.code).to.equal("data_dir_locked");
      expect(error.error).to.include(String(first.pid));
      expect(fs.readFileSync(pidFile, "utf8"), "the running node's pid file is untouched").to.equal(String(first.pid));
      const rebuild = first.cli("projections", "rebuild");
      expect(rebuild.status).to.equal(1);
      expect(rebuild.json.code).to.equal("data_dir_locked");
      expect((await first.client().get("/v1/users/me")).status, "the first node still serves").to.equal(200);
    } finally {
      await first.stop();
    }
    const rebuilt = first.cli("projections", "rebuild");
    expect(rebuilt.status, rebuilt.stderr).to.equal(0);
  });

  it("takes over a data directory whose node was killed (the lock dies with its process)", async () => {
    const server = new TestServer();
    await server.start();
    await server.kill();
    await server.start();
    expect((await server.client().get("/v1/users/me")).status).to.equal(200);
    await server.stop();
  });

  it("on SIGTERM answers a custom response in flight, records its run once, and takes no new connections", async () => {
    const server = new TestServer({ env: { HEADWATER_SHUTDOWN_GRACE_MS: "20000" } });
    await server.start();
    const admin = server.client();
    const source = await deploy(
      admin,
      `export default {
      name: "Slow answer", version: "1.0.0",
      props: { http: { type: "$.interface.http", customResponse: true } },
      async run(event) {
        await new Promise((r) => setTimeout(r, 1500));
        this.$emit({ n: event.query.n });
        this.http.respond({ status: 200, body: "answered " + event.query.n });
      },
    };`,
    );
    const url = source.configured_props.http.endpoint_url as string;
    const inFlight = fetch(`${url}?n=1`).then(async (r) => ({ status: r.status, text: await r.text() }));
    await sleep(300);
    process.kill(server.pid!, "SIGTERM");
    await sleep(200);
    const refused = await fetch(`${url}?n=2`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(refused, "new connections are refused while stopping").to.equal("refused");
    const answer = await inFlight;
    expect(answer).to.deep.equal({ status: 200, text: "answered 1" });
    await server.stop();
    await server.start();
    const kept = (await events(server.client(), source.id)).map((e) => e.event.n);
    expect(kept, "the run was recorded once, before the answer").to.deep.equal(["1"]);
    await server.stop();
  });
});
