import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { deploy, eventually, events, me, sleep } from "../sources/sourcesSupport.js";

// Admission: quotas count runs in flight, a source or an account that is too far behind is refused
// with Retry-After instead of queueing forever, and an invocation that cannot be processed is parked.

const SLOW = `export default {
  name: "Slow", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { await new Promise((r) => setTimeout(r, Number(event.query.ms ?? 100))); this.$emit({ n: event.query.n }); },
};`;

describe("abuse: admission, back-pressure and parking (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: {
      HEADWATER_FREE_DAILY_INVOCATIONS: "20",
      HEADWATER_RUN_TIMEOUT_MS: "3000",
      HEADWATER_ENDPOINT_BURST: "1000",
      HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000",
    },
  });
  let admin: ApiClient;

  const user = (username: string, plan: "free" | "paid"): ApiClient => {
    const created = server.cli("admin", "user", "create", "--username", username, "--email", `${username}@example.com`, "--plan", plan);
    expect(created.status, created.stderr).to.equal(0);
    return server.client(created.json.api_key);
  };

  before(async () => {
    await server.start();
    admin = server.client();
  });
  after(() => server.stop());

  it("counts invocations in flight against a free quota: a burst of 150 admits at most 20", async () => {
    const free = user("burst", "free");
    const source = await deploy(free, SLOW);
    const url = source.configured_props.http.endpoint_url as string;
    // Each run waits, so most of the burst is still in flight while the rest arrives.
    const statuses = await Promise.all(Array.from({ length: 150 }, (_, n) => fetch(`${url}?n=${n}&ms=50`).then((r) => r.status)));
    const accepted = statuses.filter((s) => s === 200).length;
    expect(
      statuses.every((s) => s === 200 || s === 429),
      JSON.stringify(statuses),
    ).to.equal(true);
    expect(accepted).to.equal(20);
    const used = await eventually("usage recorded", async () => {
      const data = await me(free);
      return data.daily_invocations_used >= accepted ? data.daily_invocations_used : undefined;
    });
    await sleep(500);
    expect((await me(free)).daily_invocations_used, "no run beyond what was admitted").to.equal(used);
    expect(used).to.be.at.most(20);
  });

  it("refuses a source's requests with 429 and Retry-After once its backlog is full, and admits again once it drains", async () => {
    const small = new TestServer({ env: { HEADWATER_SOURCE_BACKLOG: "5" } });
    await small.start();
    try {
      await backlogIsBounded(small.client());
    } finally {
      await small.stop();
    }
  });

  async function backlogIsBounded(admin: ApiClient): Promise<void> {
    const source = await deploy(admin, SLOW);
    const url = source.configured_props.http.endpoint_url as string;
    const first = await Promise.all(Array.from({ length: 5 }, (_, n) => fetch(`${url}?n=${n}&ms=400`).then((r) => r.status)));
    expect(first).to.deep.equal([200, 200, 200, 200, 200]);
    const refused = await fetch(`${url}?n=refused`);
    expect(refused.status).to.equal(429);
    expect(((await refused.json()) as { code: string }).code).to.equal("backlog_full");
    expect(Number(refused.headers.get("retry-after"))).to.be.at.least(1);
    await eventually("the backlog drained", async () => ((await events(admin, source.id)).length >= 5 ? true : undefined));
    await eventually("admitted again", async () => ((await fetch(`${url}?n=again&ms=1`)).status === 200 ? true : undefined));
  }

  it("parks an invocation that keeps failing, with its reason in the logs and on $errors, and goes on with the next", async () => {
    const source = await deploy(
      admin,
      `export default {
      name: "Secretive", version: "1.0.0",
      props: { http: { type: "$.interface.http" }, token: { type: "string", secret: true } },
      async run(event) { this.$emit({ n: event.query.n, tokenLength: this.token.length }); },
    };`,
      { token: "s3cr3t" },
    );
    const url = source.configured_props.http.endpoint_url as string;
    expect((await fetch(`${url}?n=before`)).status).to.equal(200);
    await eventually("a normal run", async () => ((await events(admin, source.id)).length === 1 ? true : undefined));
    // A node that cannot open the source's secrets (another secret key) cannot run it, ever.
    await server.stop();
    const other = new TestServer({
      dataDir: server.dataDir,
      bootstrapKey: server.bootstrapKey,
      // Scaled mode: the same log and bus (a new cluster would be an empty log under the old read models).
      ...(server.cluster ? { cluster: server.cluster } : {}),
      env: { HEADWATER_SECRET_KEY: "ab".repeat(32) },
    });
    await other.start();
    try {
      const client = other.client();
      expect((await fetch(`${url.replace(new URL(url).origin, other.url)}?n=parked`)).status).to.equal(200);
      const error = await eventually(
        "the parked invocation on $errors",
        async () => {
          const found = (await events(client, source.id, "$errors"))[0];
          return found?.event.error.name === "InvocationParked" ? found : undefined;
        },
        60_000,
      );
      expect(error.event.error.message)
        .to.match(/parked/)
        .and.match(/HEADWATER_SECRET_KEY/);
      expect(error.event.original_event.query).to.deep.equal({ n: "parked" });
      const logs = (await client.get(`/v1/sources/${source.id}/logs`)).body.data;
      expect(logs[0].error.name).to.equal("InvocationParked");
      expect((await client.get("/v1/users/me")).status, "the node is fine").to.equal(200);
    } finally {
      await other.stop();
      await server.start();
    }
  });
});
