import { expect } from "chai";
import { TestServer, newKey } from "../harness/server.js";
import { Receiver, eventually } from "../harness/receiver.js";
import { partitionForKey } from "../../src/bus/partition.js";
import { INVOCATION_PARTITIONS } from "../../src/runner/invocations.js";

// Operations against the real server process: liveness and readiness probes without a key,
// Prometheus metrics (requests, runs, deliveries, SSE clients, projection lag, backlog), who may
// scrape them, request ids and the structured access log.

const ECHO = `export default {
  name: "ops echo",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    if (event.body && event.body.fail) throw new Error("asked to fail");
    this.$emit(event.body, { summary: "echo" });
  },
};`;

/** The value of one sample in Prometheus text, matching every given label. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe("operations: health, readiness, metrics, request ids and logs (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1", HEADWATER_SSE_HEARTBEAT_MS: "500" } });
  const receiver = new Receiver();

  before(async () => {
    await receiver.start();
    await server.start();
  });
  after(async () => {
    await server.stop();
    await receiver.stop();
  });

  it("/healthz answers without a key", async () => {
    const r = await server.anonymous().get("/healthz");
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ status: "ok" });
    expect(r.body.version).to.be.a("string");
  });

  it("/readyz reports the log, the bus and the projections, without a key", async () => {
    const r = await server.anonymous().get("/readyz");
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.status).to.equal("ready");
    for (const check of ["log", "bus", "projections"]) expect(r.body.checks[check], check).to.include({ ok: true });
    expect(r.body.checks.projections.lag).to.be.a("number");
  });

  it("echoes a caller's X-Request-Id, makes one when absent, and logs one JSON access line per request", async () => {
    const given = await server.client().get("/v1/users/me", { "x-request-id": "trace-42.a" });
    expect(given.headers.get("x-request-id")).to.equal("trace-42.a");
    const made = await server.client().get("/v1/users/me");
    expect(made.headers.get("x-request-id")).to.match(/^[0-9a-f-]{36}$/);
    const hostile = await server.client().get("/v1/users/me", { "x-request-id": "bad id\twith spaces" });
    expect(hostile.headers.get("x-request-id")).to.match(/^[0-9a-f-]{36}$/);
    // Errors carry their id too.
    const missing = await server.client().get("/v1/nothing-here", { "x-request-id": "trace-404" });
    expect(missing.headers.get("x-request-id")).to.equal("trace-404");

    const lines = await eventually(async () => {
      const found = server.output
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.reqId === "trace-42.a" || l.reqId === "trace-404");
      return found.length >= 2 ? found : undefined;
    });
    const ok = lines.find((l) => l.reqId === "trace-42.a")!;
    expect(ok).to.include({ msg: "request", method: "GET", path: "/v1/users/me", route: "/v1/users/me", status: 200, level: 30 });
    expect(ok.ms).to.be.a("number");
    expect(ok.time).to.be.a("string");
    expect(lines.find((l) => l.reqId === "trace-404")).to.include({ status: 404, route: "unmatched" });
    const logLines = server.output.split("\n").filter((l) => l.startsWith("{"));
    expect(logLines.join("\n"), "the key never reaches the log").not.to.include(server.bootstrapKey.slice(3));
  });

  it("/metrics counts requests by route, runs with their duration, webhook deliveries, SSE clients, lag and backlog", async () => {
    const admin = server.client();
    const deployed = await admin.post("/v1/sources", { component_code: ECHO, name: "ops-echo" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const hook = (await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/ops`)}`)).body.data;
    expect((await admin.post("/v1/subscriptions", { emitter_id: source.id, listener_id: hook.id })).status).to.equal(200);

    // An SSE client stays open while we scrape.
    const sse = new AbortController();
    const stream = await fetch(`${server.url}/sources/${source.id}/sse`, {
      headers: { authorization: `Bearer ${server.bootstrapKey}` },
      signal: sse.signal,
    });
    expect(stream.status).to.equal(200);

    const endpoint = source.configured_props.http.endpoint_url as string;
    for (const body of [{ n: 1 }, { n: 2 }, { fail: true }]) {
      const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(r.status).to.equal(200);
    }
    await receiver.waitFor((r) => r.path === "/ops", 2);

    const scrape = async () => {
      const r = await fetch(`${server.url}/metrics`);
      expect(r.status).to.equal(200);
      expect(r.headers.get("content-type")).to.match(/^text\/plain; version=0\.0\.4/);
      return r.text();
    };
    const text = await eventually(async () => {
      const t = await scrape();
      const ok = sample(t, "headwater_runs_total", { trigger: "http", outcome: "ok" }) ?? 0;
      const failed = sample(t, "headwater_runs_total", { trigger: "http", outcome: "error" }) ?? 0;
      const delivered = sample(t, "headwater_webhook_deliveries_total", { outcome: "delivered" }) ?? 0;
      return ok >= 2 && failed >= 1 && delivered >= 2 ? t : undefined;
    });
    expect(sample(text, "headwater_http_requests_total", { method: "POST", route: "/v1/sources", status: "200" })).to.be.at.least(1);
    expect(sample(text, "headwater_http_requests_total", { method: "POST", route: "/e/{id}", status: "200" })).to.equal(3);
    expect(sample(text, "headwater_http_request_duration_seconds_count", { method: "POST", route: "/e/{id}" })).to.equal(3);
    expect(sample(text, "headwater_run_duration_seconds_count", { trigger: "http" })).to.be.at.least(3);
    // The source's first run made its sandbox context; the runs after it found it warm.
    expect(sample(text, "headwater_sandbox_runs_total", { start: "cold" })).to.be.at.least(1);
    expect(sample(text, "headwater_sandbox_runs_total", { start: "warm" })).to.be.at.least(1);
    expect(sample(text, "headwater_sse_clients")).to.equal(1);
    expect(sample(text, "headwater_projection_lag")).to.be.a("number").and.at.least(0);
    expect(sample(text, "headwater_projection_parked_events")).to.equal(0);
    expect(sample(text, "headwater_log_head_position")).to.be.greaterThan(0);
    expect(sample(text, "headwater_backlog_invocations")).to.be.a("number");
    expect(sample(text, "headwater_backlog_limit", { bound: "source" })).to.equal(1000);
    expect(sample(text, "process_resident_memory_bytes")).to.be.greaterThan(0);
    expect(text, "raw paths never become labels").not.to.include(source.id);

    sse.abort();
    await eventually(
      async () => (sample(await scrape(), "headwater_sse_clients") === 0 ? true : undefined),
      10_000,
      "the SSE client to go",
    );
  });

  it("/metrics reports each bus partition's backlog and lag: the records a slow run holds up, and none once they ran", async () => {
    const admin = server.client();
    const slowCode = `export default {
      name: "Slow first", version: "0.0.1",
      props: { http: { type: "$.interface.http" } },
      async run(event) {
        if (event.body && event.body.slow) await new Promise((resolve) => setTimeout(resolve, 3000));
        this.$emit(event.body);
      },
    };`;
    const deployed = await admin.post("/v1/sources", { component_code: slowCode, name: "ops-slow" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const partition = String(partitionForKey(source.id, INVOCATION_PARTITIONS));
    const backlog = async (metric = "headwater_bus_partition_backlog_records") => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      // The topic's name carries the bus namespace in the scaled mode: match it by its end.
      const line = text
        .split("\n")
        .find(
          (l) =>
            l.startsWith(`${metric}{`) &&
            l.includes('group="headwater.runners"') &&
            /topic="[^"]*headwater\.invocations"/.test(l) &&
            l.includes(`partition="${partition}"`),
        );
      return line === undefined ? undefined : Number(line.split(" ").at(-1));
    };
    const endpoint = source.configured_props.http.endpoint_url as string;
    for (const body of [{ slow: true }, { n: 1 }, { n: 2 }]) {
      const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(r.status).to.equal(200);
    }
    await eventually(
      async () => (((await backlog()) ?? 0) >= 3 ? true : undefined),
      2_500,
      "the partition's backlog to show the 3 waiting invocations",
    );
    // The lag counts from the group's committed offset to the partition's end: the same 3.
    await eventually(
      async () => (((await backlog("headwater_bus_partition_lag_records")) ?? 0) >= 3 ? true : undefined),
      2_500,
      "the partition's lag to show the 3 uncommitted invocations",
    );
    await eventually(async () => ((await backlog()) === 0 ? true : undefined), 15_000, "the partition's backlog to drain");
    await eventually(
      async () => ((await backlog("headwater_bus_partition_lag_records")) === 0 ? true : undefined),
      15_000,
      "the partition's lag to be 0 once committed",
    );
  });

  it("/metrics: loopback without a token; with HEADWATER_METRICS_TOKEN only the token or an operator key", async () => {
    const token = "metrics-" + newKey().slice(3);
    const guarded = new TestServer({ env: { HEADWATER_METRICS_TOKEN: token } });
    await guarded.start();
    try {
      const without = await guarded.anonymous().get("/metrics");
      expect(without.status).to.equal(401);
      expect(without.body.code).to.equal("unauthorized");
      expect((await guarded.anonymous().get("/metrics", { authorization: `Bearer ${token}` })).status).to.equal(200);
      expect((await guarded.anonymous().get("/metrics", { authorization: "Bearer wrong" })).status).to.equal(401);
      expect((await guarded.client().get("/metrics")).status, "the operator's key").to.equal(200);
      const user = guarded.cli("admin", "user", "create", "--username", "plain", "--email", "plain@example.com");
      expect((await guarded.client(user.json.api_key).get("/metrics")).status, "a user's key").to.equal(401);
      // The probes stay open.
      expect((await guarded.anonymous().get("/healthz")).status).to.equal(200);
      expect((await guarded.anonymous().get("/readyz")).status).to.equal(200);
    } finally {
      await guarded.stop();
    }
  });

  it("HEADWATER_LOG_LEVEL=warn silences the access log", async () => {
    const quiet = new TestServer({ env: { HEADWATER_LOG_LEVEL: "warn" } });
    await quiet.start();
    try {
      await quiet.client().get("/v1/users/me", { "x-request-id": "quiet-1" });
      await new Promise((r) => setTimeout(r, 200));
      expect(quiet.output).not.to.include("quiet-1");
      expect(quiet.output).to.include("Bootstrap operator API key");
    } finally {
      await quiet.stop();
    }
  });
});
