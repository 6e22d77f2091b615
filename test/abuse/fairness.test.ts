import { expect } from "chai";
import http from "node:http";
import { TestServer, type ApiClient } from "../harness/server.js";
import { deploy } from "../sources/sourcesSupport.js";

// Fair scheduling against the real server process: one user's never-settling sources, hammered
// at their burst limit, do not delay another user's runs beyond the documented bound.

/** README "Fair scheduling": another tenant's run is answered within this, whatever one tenant floods. */
const FAIRNESS_BOUND_MS = 2_000;

const HANGS = `export default {
  name: "Hangs", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run() { await new Promise(() => {}); },
};`;

const ANSWERS = `export default {
  name: "Answers", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) { this.$emit({ n: event.query.n }); this.http.respond({ status: 200, body: "ok " + event.query.n }); },
};`;

describe("abuse: fair scheduling (real server)", function () {
  this.timeout(180_000);
  const server = new TestServer({
    env: { HEADWATER_RUN_TIMEOUT_MS: "8000", HEADWATER_ENDPOINT_BURST: "200", HEADWATER_ENDPOINT_RATE_PER_SECOND: "50" },
  });
  let flooder: ApiClient;
  let bystander: ApiClient;

  const user = (username: string): ApiClient => {
    const created = server.cli("admin", "user", "create", "--username", username, "--email", `${username}@example.com`, "--plan", "paid");
    expect(created.status, created.stderr).to.equal(0);
    return server.client(created.json.api_key);
  };

  before(async () => {
    await server.start();
    flooder = user("flooder");
    bystander = user("bystander");
  });
  after(() => server.stop());

  it("keeps another user's run latency under the bound while 50 never-settling sources are hammered at their burst", async () => {
    const hanging = await Promise.all(Array.from({ length: 50 }, () => deploy(flooder, HANGS)));
    const answers = await deploy(bystander, ANSWERS);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const post = (url: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        });
        req.on("error", reject);
        req.end("{}");
      });
    // The flood: every hanging source's whole burst (200 each), 64 requests at a time.
    const targets = hanging.flatMap((s) => Array.from({ length: 200 }, () => s.configured_props.http.endpoint_url as string));
    const statuses: number[] = [];
    let next = 0;
    const flood = Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < targets.length) statuses.push(await post(targets[next++]));
      }),
    );
    // Meanwhile, the bystander's requests, one after another, each a full run and answer.
    const latencies: number[] = [];
    const url = answers.configured_props.http.endpoint_url as string;
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let n = 0; n < 20; n++) {
      const started = Date.now();
      const r = await fetch(`${url}?n=${n}`);
      expect(r.status).to.equal(200);
      expect(await r.text()).to.equal(`ok ${n}`);
      latencies.push(Date.now() - started);
    }
    await flood;
    agent.destroy();
    const accepted = statuses.filter((s) => s === 200).length;
    expect(accepted, "the flood was admitted: its runs are queued behind hanging runs").to.be.greaterThan(5_000);
    expect(
      statuses.every((s) => s === 200 || s === 429),
      `only 200 or 429: ${[...new Set(statuses)].join(",")}`,
    ).to.equal(true);
    latencies.sort((a, b) => a - b);
    console.log(`      bystander latencies (ms): ${latencies.join(" ")}; flood accepted ${accepted}`);
    expect(latencies[latencies.length - 1], `bystander latencies ${latencies.join(",")} ms`).to.be.below(FAIRNESS_BOUND_MS);
    // The node still answers its API.
    expect((await bystander.get("/v1/users/me")).status).to.equal(200);
  });
});
