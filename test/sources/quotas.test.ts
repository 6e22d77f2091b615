import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { EMIT_TIMER_EVENT, deploy, eventually, events, me } from "./sourcesSupport.js";

// Usage counters and free-plan quotas over real HTTP against the real server process.

const INVOCATIONS_QUOTA = 3;
const COMPUTE_QUOTA_MS = 1000;

/** Emits each request's body; `wait` ms of run time per request when the body asks for it. */
const ECHO_BODY = `export default {
  name: "Body echo",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    if (event.body && event.body.wait) await new Promise((resolve) => setTimeout(resolve, event.body.wait));
    this.$emit(event.body, { summary: "body" });
  },
};`;

/** Seconds until the next 00:00 UTC, when a free account's daily quota starts again. */
const secondsToUtcMidnight = () => Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);

describe("usage and quotas (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({
    env: {
      HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1",
      HEADWATER_FREE_DAILY_INVOCATIONS: String(INVOCATIONS_QUOTA),
      HEADWATER_FREE_DAILY_COMPUTE_MS: String(COMPUTE_QUOTA_MS),
    },
  });

  const user = (username: string, plan: "free" | "paid" = "free"): ApiClient => {
    const created = server.cli("admin", "user", "create", "--username", username, "--email", `${username}@example.com`, "--plan", plan);
    expect(created.status, created.stderr).to.equal(0);
    return server.client(created.json.api_key);
  };
  const endpointOf = (source: any) => new URL(source.configured_props.http.endpoint_url).pathname;
  const hit = (client: ApiClient, source: any, body: unknown) => client.post(endpointOf(source), body);
  const eventCount = async (client: ApiClient, sourceId: string, n: number) =>
    eventually(`${n} events`, async () => ((await events(client, sourceId)).length >= n ? true : undefined));
  /** The caller's usage once `field` reached `n` (runs are recorded before their log, which is what counts). */
  const usageAt = async (client: ApiClient, field: string, n: number) =>
    eventually(`${field} >= ${n}`, async () => {
      const data = await me(client);
      return data[field] >= n ? data : undefined;
    });
  const expectQuota429 = (r: { status: number; body: any; headers: Headers }, reason: RegExp) => {
    expect(r.status, JSON.stringify(r.body)).to.equal(429);
    expect(r.body.code).to.equal("quota_exceeded");
    expect(r.body.error).to.match(reason);
    const retryAfter = Number(r.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 86_400, `Retry-After ${retryAfter}`).to.equal(true);
    expect(Math.abs(retryAfter - secondsToUtcMidnight()), "Retry-After points at 00:00 UTC").to.be.at.most(5);
  };

  before(() => server.start());
  after(() => server.stop());

  it("a free account's invocations count in daily_invocations_used; over the quota its endpoints answer 429 and its timers skip with an $errors event", async () => {
    const client = user("free-invocations");
    const fresh = await me(client);
    expect(fresh).to.include({
      daily_invocations_used: 0,
      daily_invocations_quota: INVOCATIONS_QUOTA,
      daily_compute_time_used: 0,
      daily_compute_time_quota: COMPUTE_QUOTA_MS,
    });
    expect(fresh).to.not.have.property("billing_period_invocations");

    const http = await deploy(client, ECHO_BODY);
    expect((await hit(client, http, { n: 1 })).status).to.equal(200);
    await eventCount(client, http.id, 1);
    expect((await usageAt(client, "daily_invocations_used", 1)).daily_invocations_used).to.equal(1);
    const manual = await client.post(`/v1/sources/${http.id}/run`, { event: { body: { n: 2 } } });
    expect(manual.status, JSON.stringify(manual.body)).to.equal(200);
    expect((await me(client)).daily_invocations_used).to.equal(2);

    // The timer's first tick uses the last invocation; every later tick is skipped and says why.
    const timer = await deploy(client, EMIT_TIMER_EVENT, { timer: { intervalSeconds: 1 } });
    const errors = await eventually("two $errors events", async () => {
      const got = await events(client, timer.id, "$errors");
      return got.length >= 2 ? got : undefined;
    });
    for (const e of errors) {
      expect(e.metadata.name).to.equal("$errors");
      expect(e.event.error.name).to.equal("QuotaExceeded");
      expect(e.event.error.message).to.match(new RegExp(`daily invocations quota \\(${INVOCATIONS_QUOTA}\\)`));
      expect(e.event.original_event.timestamp).to.be.a("number");
    }
    const ran = await events(client, timer.id, "");
    expect(ran.length, "timer runs before the quota was used up").to.equal(1);
    expect(ran[0].event).to.have.keys(["timestamp", "interval_seconds"]);
    expect((await me(client)).daily_invocations_used, "skipped ticks do not count").to.equal(INVOCATIONS_QUOTA);

    expectQuota429(await hit(client, http, { n: 3 }), /daily invocations quota/);
    expectQuota429(await client.post(`/v1/sources/${http.id}/run`, {}), /daily invocations quota/);
    expect((await events(client, http.id)).length, "refused requests emit nothing").to.equal(2);
    expect((await me(client)).daily_invocations_used).to.equal(INVOCATIONS_QUOTA);
  });

  it("a run's compute time counts in daily_compute_time_used, in milliseconds, against the compute quota", async () => {
    const client = user("free-compute");
    const http = await deploy(client, ECHO_BODY);
    expect((await hit(client, http, { wait: 600 })).status).to.equal(200);
    await eventCount(client, http.id, 1);
    const first = await usageAt(client, "daily_invocations_used", 1);
    expect(first.daily_invocations_used).to.equal(1);
    // Milliseconds: at least the 600 ms the run waited, and not a count of microseconds.
    expect(first.daily_compute_time_used).to.be.within(600, 3000);
    const logs = await client.get(`/v1/sources/${http.id}/logs`);
    expect(logs.body.data[0].compute_ms).to.equal(first.daily_compute_time_used);

    expect((await hit(client, http, { wait: 600 })).status).to.equal(200);
    await eventCount(client, http.id, 2);
    const second = await usageAt(client, "daily_invocations_used", 2);
    expect(second.daily_compute_time_used).to.be.at.least(first.daily_compute_time_used + 600);
    expect(second.daily_invocations_used).to.be.below(INVOCATIONS_QUOTA);
    expectQuota429(await hit(client, http, { n: 3 }), /compute time quota \(1000 ms\)/);
  });

  it("paid accounts count billing_period_invocations and are not held to the free quota", async () => {
    const client = user("paid-user", "paid");
    const before = await me(client);
    expect(before).to.not.have.property("daily_invocations_used");
    const now = Math.floor(Date.now() / 1000);
    expect(before.billing_period_start_ts).to.be.at.most(now);
    expect(before.billing_period_end_ts).to.be.greaterThan(now);
    expect(before.billing_period_invocations).to.equal(0);

    const http = await deploy(client, ECHO_BODY);
    const runs = INVOCATIONS_QUOTA + 2;
    for (let n = 0; n < runs; n++) expect((await hit(client, http, { n })).status).to.equal(200);
    await eventCount(client, http.id, runs);
    const manual = await client.post(`/v1/sources/${http.id}/run`, { event: { body: { n: "manual" } } });
    expect(manual.status).to.equal(200);
    expect((await me(client)).billing_period_invocations).to.equal(runs + 1);
  });
  it("hooks of a refused deploy are billed like runs (they spent compute), and a free account past its quota cannot run hooks", async () => {
    const client = user("free-hooks");
    const failing = `export default {
      name: "Failing hook", version: "0.0.1",
      props: { http: { type: "$.interface.http" } },
      hooks: { async deploy() { await new Promise((r) => setTimeout(r, 150)); throw new Error("the deploy hook fails"); } },
      async run() {},
    };`;
    for (let n = 1; n <= INVOCATIONS_QUOTA; n++) {
      const refused = await client.post("/v1/sources", { component_code: failing });
      expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
      expect(refused.body.code).to.equal("hook_failed");
      const used = await usageAt(client, "daily_invocations_used", n);
      expect(used.daily_invocations_used, "each refused deploy's hook counts once").to.equal(n);
      expect(used.daily_compute_time_used, "its wall time is billed").to.be.at.least(150 * n);
    }
    expectQuota429(await client.post("/v1/sources", { component_code: failing }), /daily invocations quota/);
    expect((await me(client)).daily_invocations_used, "a hook refused by the quota does not run").to.equal(INVOCATIONS_QUOTA);
    const noHooks = await client.post("/v1/sources", { component_code: ECHO_BODY });
    expect(noHooks.status, "a deploy that runs no code is not held to the quota").to.equal(200);
  });
});
