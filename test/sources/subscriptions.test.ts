import { expect } from "chai";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver, type Received } from "../harness/receiver.js";
import { deploy, eventually, events, sleep } from "./sourcesSupport.js";

// Subscriptions, webhooks and delivery end to end: real server process (embedded, or PostgreSQL +
// Kafka), real HTTP receivers on loopback, signatures checked by the standardwebhooks package.

const EMITTER = `export default {
  name: "Emitter", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    const b = event.body ?? {};
    if (b.fail) throw new Error("asked to fail: " + b.n);
    this.$emit({ n: b.n }, { name: b.channel, summary: "n=" + b.n });
  },
};`;

/** A source that emits what it receives, tagged with its own name. */
const RELAY = (tag: string) => `export default {
  name: "Relay ${tag}", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { console.log("relay ${tag} got", JSON.stringify(event)); this.$emit({ via: "${tag}", got: event }); },
};`;

describe("subscriptions and delivery (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: {
      HEADWATER_ALLOW_PRIVATE_NETWORKS: "1",
      HEADWATER_WEBHOOK_RETRY_MS: "100",
      HEADWATER_WEBHOOK_RETRY_MAX_MS: "400",
      HEADWATER_DELIVERY_SWEEP_MS: "200",
    },
  });
  const receiver = new Receiver();
  let admin: ApiClient;
  let other: ApiClient;

  const hit = (source: any, body: unknown) =>
    fetch(source.configured_props.http.endpoint_url as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const subscribe = (client: ApiClient, emitter: string, listener: string, channel?: string) =>
    client.post(
      `/v1/subscriptions?emitter_id=${encodeURIComponent(emitter)}&listener_id=${listener}${channel === undefined ? "" : `&event_name=${encodeURIComponent(channel)}`}`,
    );
  const webhook = async (client: ApiClient, path: string, name = path) => {
    const r = await client.post(`/v1/webhooks?url=${encodeURIComponent(receiver.url + path)}&name=${encodeURIComponent(name)}`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data as { id: string };
  };
  const at = (path: string) => (r: Received) => r.path === path;
  const bodyOf = (r: Received) =>
    JSON.parse(r.body) as { id: string; event: any; metadata: { name: string; emitter_id: string; emit_id: string } };

  before(async () => {
    await Promise.all([server.start(), receiver.start()]);
    admin = server.client();
    const created = server.cli("admin", "user", "create", "--username", "subscriber2", "--email", "s2@example.com", "--plan", "paid");
    other = server.client(created.json.api_key);
  });
  after(async () => {
    await server.stop();
    await receiver.stop();
  });

  it("creates a subscription from the query string, idempotently; lists and deletes it by its triple", async () => {
    const source = await deploy(admin, EMITTER);
    const hook = await webhook(admin, "/idem");
    const first = await subscribe(admin, source.id, hook.id);
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body.data).to.deep.include({ emitter_id: source.id, listener_id: hook.id, event_name: "" });
    expect(first.body.data.id).to.match(/^sub_[0-9a-z]+$/);
    const again = await subscribe(admin, source.id, hook.id);
    expect(again.body.data.id, "the same triple is the same subscription").to.equal(first.body.data.id);
    const named = await subscribe(admin, source.id, hook.id, "alerts");
    expect(named.body.data.id).to.not.equal(first.body.data.id);
    const listed = (await admin.get("/v1/users/me/subscriptions")).body.data.map((s: { id: string }) => s.id);
    expect(listed).to.include.members([first.body.data.id, named.body.data.id]);
    expect(listed.filter((id: string) => id === first.body.data.id)).to.have.length(1);
    const deleted = await admin.delete(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}&event_name=`);
    expect(deleted.status).to.equal(204);
    expect((await admin.delete(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}&event_name=`)).status).to.equal(404);
    const after = (await admin.get("/v1/users/me/subscriptions")).body.data.map((s: { id: string }) => s.id);
    expect(after).to.include(named.body.data.id).and.not.include(first.body.data.id);
  });

  it("a subscription ends with its emitter or its listener: once either is deleted, DELETE of it answers 404", async () => {
    const source = await deploy(admin, EMITTER);
    const kept = await deploy(admin, EMITTER);
    const hook = await webhook(admin, "/ended");
    const doomedHook = await webhook(admin, "/ended-too");
    expect((await subscribe(admin, source.id, hook.id)).status).to.equal(200);
    expect((await subscribe(admin, kept.id, doomedHook.id)).status).to.equal(200);
    expect((await admin.delete(`/v1/sources/${source.id}`)).status).to.equal(204);
    expect((await admin.delete(`/v1/webhooks/${doomedHook.id}`)).status).to.equal(204);
    for (const [emitter, listener] of [
      [source.id, hook.id],
      [kept.id, doomedHook.id],
    ]) {
      const gone = await admin.delete(`/v1/subscriptions?emitter_id=${emitter}&listener_id=${listener}`);
      expect(gone.status, JSON.stringify(gone.body)).to.equal(404);
    }
    const listed = (await admin.get("/v1/users/me/subscriptions")).body.data as { emitter_id: string; listener_id: string }[];
    expect(listed.filter((s) => s.emitter_id === source.id || s.listener_id === doomedHook.id)).to.deep.equal([]);
  });

  it("answers 404 for another user's emitter or listener, and 400 for what cannot be an emitter, listener or channel", async () => {
    const mine = await deploy(admin, EMITTER);
    const theirs = await deploy(other, EMITTER);
    const myHook = await webhook(admin, "/mine");
    const theirHook = await webhook(other, "/theirs");
    expect((await subscribe(admin, theirs.id, myHook.id)).status).to.equal(404);
    expect((await subscribe(admin, mine.id, theirHook.id)).status).to.equal(404);
    expect((await subscribe(admin, "dc_doesnotexist", myHook.id)).status).to.equal(404);
    expect((await subscribe(admin, "wh_x", myHook.id)).status).to.equal(400);
    expect((await subscribe(admin, mine.id, "u_x")).status).to.equal(400);
    expect((await admin.post(`/v1/subscriptions?listener_id=${myHook.id}`)).status, "emitter_id is required").to.equal(400);
    expect((await admin.post(`/v1/auto_subscriptions?event_name=alerts&listener_id=${myHook.id}`)).status).to.equal(400);
    expect((await admin.post(`/v1/auto_subscriptions?event_name=$errors&listener_id=${theirHook.id}`)).status).to.equal(404);
    expect(
      (await admin.delete(`/v1/subscriptions?emitter_id=${theirs.id}&listener_id=${theirHook.id}&event_name=`)).status,
      "someone else's subscription",
    ).to.equal(404);
  });

  it("delivers each event to a webhook as JSON signed per Standard Webhooks, with headers naming emitter and channel", async () => {
    const source = await deploy(admin, EMITTER);
    const hook = await webhook(admin, "/signed");
    expect((await subscribe(admin, source.id, hook.id)).status).to.equal(200);
    expect((await hit(source, { n: 1 })).status).to.equal(200);
    const [got] = await receiver.waitFor(at("/signed"), 1);
    const secret = (await admin.get(`/v1/webhooks/${hook.id}/secret`)).body.data.secret as string;
    expect(secret).to.match(/^whsec_/);
    const verified = new StandardWebhook(secret).verify(got.body, got.headers as Record<string, string>) as any;
    expect(verified.event).to.deep.equal({ n: 1 });
    expect(verified.metadata).to.include({ emitter_id: source.id, name: "" });
    expect(typeof verified.metadata.emit_id, "emit_id is a string, also without an id").to.equal("string");
    expect(got.headers["x-headwater-emitter-id"]).to.equal(source.id);
    expect(got.headers["x-headwater-event-name"]).to.equal("");
    expect(got.headers["content-type"]).to.match(/application\/json/);
    expect(
      () => new StandardWebhook(secret).verify(got.body.replace("1", "2"), got.headers as Record<string, string>),
      "a changed body fails",
    ).to.throw();
  });

  it("routes by channel: named channels, $errors (with the error and original event, never on the default channel) and $logs", async () => {
    const source = await deploy(admin, EMITTER);
    const [onDefault, onAlerts, onErrors, onLogs] = await Promise.all(
      ["/ch-default", "/ch-alerts", "/ch-errors", "/ch-logs"].map((p) => webhook(admin, p)),
    );
    await subscribe(admin, source.id, onDefault.id);
    await subscribe(admin, source.id, onAlerts.id, "alerts");
    await subscribe(admin, source.id, onErrors.id, "$errors");
    await subscribe(admin, source.id, onLogs.id, "$logs");
    await hit(source, { n: "d" });
    await hit(source, { n: "a", channel: "alerts" });
    await hit(source, { n: "e", fail: true });
    const [errorDelivery] = await receiver.waitFor(at("/ch-errors"), 1);
    const error = bodyOf(errorDelivery);
    expect(error.metadata.name).to.equal("$errors");
    expect(error.event.error.message).to.match(/asked to fail: e/);
    expect(error.event.original_event.body).to.deep.equal({ n: "e", fail: true });
    const logs = await receiver.waitFor(at("/ch-logs"), 3);
    expect(logs.map((l) => bodyOf(l).metadata.name)).to.deep.equal(["$logs", "$logs", "$logs"]);
    expect(bodyOf(logs[2]).event.ok).to.equal(false);
    const [alerts] = await receiver.waitFor(at("/ch-alerts"), 1);
    expect(bodyOf(alerts).event).to.deep.equal({ n: "a" });
    await sleep(300);
    const defaults = receiver.received.filter(at("/ch-default")).map((r) => bodyOf(r).event);
    expect(defaults, "only the default channel, never $errors").to.deep.equal([{ n: "d" }]);
  });

  it("retries a receiver that answers 500 for a while: every event arrives, in order, each with its stable webhook-id", async () => {
    const source = await deploy(admin, EMITTER);
    const hook = await webhook(admin, "/flaky");
    await subscribe(admin, source.id, hook.id);
    let failures = 0;
    receiver.answer = (request) => (request.path === "/flaky" && failures++ < 6 ? 500 : 200);
    try {
      for (let n = 0; n < 10; n++) expect((await hit(source, { n })).status).to.equal(200);
      const okOnes = await eventually(
        "all 10 delivered",
        async () => {
          const got = receiver.received.filter(at("/flaky"));
          const firsts = new Map<string, number>();
          got.forEach((r, i) => firsts.set(r.headers["webhook-id"] as string, i));
          return firsts.size >= 10 && got.length >= 16 ? got : undefined;
        },
        30_000,
      );
      // The last copy of each id is its successful one; they come in emit order.
      const lastOfEach = new Map<string, number>();
      okOnes.forEach((r, i) => lastOfEach.set(r.headers["webhook-id"] as string, i));
      const order = [...lastOfEach.entries()]
        .sort((a, b) => a[1] - b[1])
        .map(([id]) => bodyOf(okOnes.find((r) => r.headers["webhook-id"] === id)!).event.n);
      expect(order).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // Retries of one event carry one id; the first event took the failures.
      const firstId = okOnes[0].headers["webhook-id"];
      expect(okOnes.slice(0, 7).every((r) => r.headers["webhook-id"] === firstId)).to.equal(true);
      // Each attempt is recorded once its receiver answered: the last ones show shortly after their arrival.
      const attempts = await eventually("every attempt in the listing", async () => {
        const listed = (await admin.get(`/v1/webhooks/${hook.id}/deliveries?limit=100`)).body;
        return listed.data.length >= 16 ? listed : undefined;
      });
      expect(attempts.data.filter((a: { status: string }) => a.status === "failed")).to.have.length(6);
      const failed = attempts.data.find((a: { status: string }) => a.status === "failed");
      expect(failed).to.include({ response_code: 500, delivery_id: firstId });
      expect(failed.next_attempt_at_ms).to.be.a("number");
      expect(attempts.data.filter((a: { status: string }) => a.status === "delivered")).to.have.length(10);
    } finally {
      receiver.answer = undefined;
    }
  });

  it("sends a new event of one emitter while another emitter's delivery to the same webhook still waits for its answer", async () => {
    const slow = await deploy(admin, EMITTER);
    const quick = await deploy(admin, EMITTER);
    const hook = await webhook(admin, "/lanes");
    await subscribe(admin, slow.id, hook.id);
    await subscribe(admin, quick.id, hook.id);
    // The slow emitter's delivery is answered only once the quick one's has arrived (or after 4 s,
    // below the 5 s after which an answer counts as slow).
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let heldAt: number | undefined;
    let held = false;
    let quickArrivedWhileHeld = false;
    receiver.routes.set("/lanes", (req, res) => {
      const emitter = req.headers["x-headwater-emitter-id"];
      if (emitter === slow.id) {
        heldAt = Date.now();
        held = true;
        void Promise.race([released, sleep(4_000)]).then(() => {
          held = false;
          res.writeHead(200).end("{}");
        });
        return;
      }
      quickArrivedWhileHeld = held;
      release();
      res.writeHead(200).end("{}");
    });
    try {
      expect((await hit(slow, { n: "slow" })).status).to.equal(200);
      await eventually("the slow emitter's delivery is held", async () => heldAt);
      expect((await hit(quick, { n: "quick" })).status).to.equal(200);
      await receiver.waitFor(at("/lanes"), 2);
      // Before, a turn sent what it had taken and recorded it before taking what came meanwhile.
      expect(quickArrivedWhileHeld, "the quick emitter's event did not wait for the slow one's answer").to.equal(true);
      const attempts = await eventually("both attempts recorded", async () => {
        const listed = (await admin.get(`/v1/webhooks/${hook.id}/deliveries`)).body;
        return listed.data.length >= 2 ? listed.data : undefined;
      });
      expect(attempts.map((a: { status: string }) => a.status)).to.deep.equal(["delivered", "delivered"]);
    } finally {
      receiver.routes.delete("/lanes");
      release();
    }
  });

  it("globs reach sources created later; auto-subscriptions apply to sources created after them only", async () => {
    const hook = await webhook(other, "/glob");
    const errorsHook = await webhook(other, "/auto-errors");
    expect((await subscribe(other, "dc_*", hook.id)).status).to.equal(200);
    const before = await deploy(other, EMITTER);
    expect((await other.post(`/v1/auto_subscriptions?event_name=$errors&listener_id=${errorsHook.id}`)).status).to.equal(200);
    const later = await deploy(other, EMITTER);
    await hit(later, { n: "later" });
    await hit(before, { n: "fails-before", fail: true });
    await hit(later, { n: "fails-later", fail: true });
    const globbed = await receiver.waitFor(at("/glob"), 1);
    expect(bodyOf(globbed[0]).event).to.deep.equal({ n: "later" });
    const [auto] = await receiver.waitFor(at("/auto-errors"), 1);
    expect(bodyOf(auto).event.original_event.body.n).to.equal("fails-later");
    await sleep(300);
    expect(receiver.received.filter(at("/auto-errors")), "the source created before is not covered").to.have.length(1);
    const listed = (await other.get("/v1/users/me/subscriptions")).body.data;
    expect(listed.some((s: any) => s.emitter_id === later.id && s.listener_id === errorsHook.id && s.event_name === "$errors")).to.equal(
      true,
    );
  });

  it("chains sources (a source's run receives another's events and emits in turn), and stops a cycle, saying so in the logs", async () => {
    const a = await deploy(admin, EMITTER);
    const b = await deploy(admin, RELAY("b"));
    const out = await webhook(admin, "/chain-out");
    await subscribe(admin, a.id, b.id);
    await subscribe(admin, b.id, out.id);
    await hit(a, { n: "chained" });
    const [delivered] = await receiver.waitFor(at("/chain-out"), 1);
    expect(bodyOf(delivered).event).to.deep.equal({ via: "b", got: { n: "chained" } });

    const x = await deploy(admin, RELAY("x"));
    const y = await deploy(admin, RELAY("y"));
    await subscribe(admin, x.id, y.id);
    await subscribe(admin, y.id, x.id);
    await admin.post(`/v1/sources/${x.id}/run`, { event: { start: true } });
    const stopped = await eventually(
      "the cycle stopped",
      async () => {
        const logs = (await admin.get(`/v1/sources/${x.id}/logs?limit=100`)).body.data as {
          error: { name: string; message: string } | null;
        }[];
        return logs.find((l) => l.error?.name === "SubscriptionCycle");
      },
      20_000,
    );
    expect(stopped.error!.message).to.include(`${x.id} → ${y.id} → ${x.id}`);
    await sleep(500);
    expect((await events(admin, x.id)).length, "x ran once (by hand), never again through the cycle").to.equal(1);
    expect((await events(admin, y.id)).length).to.equal(1);
  });

  it("stops a cycle of $logs subscriptions too (a run's log carries its chain), and the stopped run's log still reaches a webhook", async () => {
    const x = await deploy(admin, RELAY("lx"));
    const y = await deploy(admin, RELAY("ly"));
    const out = await webhook(admin, "/logs-cycle");
    await subscribe(admin, x.id, y.id, "$logs");
    await subscribe(admin, y.id, x.id, "$logs");
    await subscribe(admin, x.id, out.id, "$logs");
    await admin.post(`/v1/sources/${x.id}/run`, { event: { start: true } });
    const logsOf = async (id: string) =>
      (await admin.get(`/v1/sources/${id}/logs?limit=100`)).body.data as { error: { name: string; message: string } | null }[];
    const stopped = await eventually(
      "the cycle stopped",
      async () => (await logsOf(x.id)).find((l) => l.error?.name === "SubscriptionCycle"),
      20_000,
    );
    expect(stopped.error!.message).to.include(`${x.id} → ${y.id} → ${x.id}`);
    // x's two logs (its run by hand, then the stopped delivery) reach the webhook; y is not run by the second.
    const delivered = await receiver.waitFor(at("/logs-cycle"), 2);
    expect(delivered.map((r) => bodyOf(r).event.error?.name ?? null).sort()).to.deep.equal([null, "SubscriptionCycle"].sort());
    await sleep(1_000);
    expect((await events(admin, x.id)).length, "x ran once (by hand), never again through the cycle").to.equal(1);
    expect((await events(admin, y.id)).length, "y ran once, for x's first log").to.equal(1);
    expect((await logsOf(x.id)).length).to.equal(2);
    expect((await logsOf(y.id)).length).to.equal(1);
    expect(receiver.received.filter(at("/logs-cycle"))).to.have.length(2);
  });

  it("manages webhooks: validation, listing, update, pause and resume, secret rotation, delete, attempts and re-send", async () => {
    for (const url of ["ftp://example.com/x", "not a url", "https://"]) {
      expect((await admin.post(`/v1/webhooks?url=${encodeURIComponent(url)}`)).status, url).to.equal(400);
    }
    const created = await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/managed`)}&name=Managed&description=d`);
    expect(created.body.data).to.include({ name: "Managed", description: "d", active: true, url: `${receiver.url}/managed` });
    expect(created.body.data.user_id).to.match(/^u_/);
    const id = created.body.data.id as string;
    const page = await admin.get("/v1/users/me/webhooks?limit=1");
    expect(page.body.page_info.count).to.equal(1);
    expect(page.body.page_info.total_count).to.be.at.least(5);
    expect((await other.get(`/v1/webhooks/${id}`)).status, "another user's webhook").to.equal(404);
    const source = await deploy(admin, EMITTER);
    await subscribe(admin, source.id, id);
    expect((await admin.post(`/v1/webhooks/${id}/pause`)).body.data).to.include({ active: false, status: "paused" });
    await hit(source, { n: "while-paused" });
    await sleep(800);
    expect(receiver.received.filter(at("/managed")), "a paused webhook gets nothing").to.have.length(0);
    expect((await admin.put(`/v1/webhooks/${id}`, { active: true, name: "Renamed" })).body.data).to.include({
      active: true,
      name: "Renamed",
    });
    const oldSecret = (await admin.get(`/v1/webhooks/${id}/secret`)).body.data.secret as string;
    const newSecret = (await admin.post(`/v1/webhooks/${id}/secret/rotate`)).body.data.secret as string;
    expect(newSecret).to.not.equal(oldSecret);
    await hit(source, { n: "after-rotation" });
    const [got] = await receiver.waitFor(at("/managed"), 1);
    // Both secrets verify during the grace period.
    new StandardWebhook(newSecret).verify(got.body, got.headers as Record<string, string>);
    new StandardWebhook(oldSecret).verify(got.body, got.headers as Record<string, string>);
    // The attempt is recorded once the receiver has answered: it shows in the listing shortly after the arrival.
    const attempts = await eventually("the delivery attempt in the listing", async () => {
      const listed = (await admin.get(`/v1/webhooks/${id}/deliveries`)).body.data;
      return listed.length > 0 ? listed : undefined;
    });
    expect(attempts[0]).to.include({ status: "delivered", response_code: 200, attempt: 1, emitter_id: source.id });
    const resent = await admin.post(`/v1/webhooks/${id}/deliveries/${attempts[0].delivery_id}/resend`);
    expect(resent.status).to.equal(202);
    const copies = await receiver.waitFor(at("/managed"), 2);
    expect(copies[1].headers["webhook-id"], "a re-send keeps the webhook-id").to.equal(copies[0].headers["webhook-id"]);
    // The re-send's attempt is numbered on from the first one, not "attempt 1" again.
    const numbered = await eventually("the re-send's attempt in the listing", async () => {
      const listed = (await admin.get(`/v1/webhooks/${id}/deliveries`)).body.data as { delivery_id: string; attempt: number }[];
      const ofIt = listed.filter((a) => a.delivery_id === attempts[0].delivery_id);
      return ofIt.length === 2 ? ofIt : undefined;
    });
    expect(numbered.map((a) => a.attempt)).to.deep.equal([2, 1]);
    expect((await admin.post(`/v1/webhooks/${id}/deliveries/msg_nope/resend`)).status).to.equal(404);
    expect((await admin.delete(`/v1/webhooks/${id}`)).status).to.equal(204);
    expect((await admin.get(`/v1/webhooks/${id}`)).status).to.equal(404);
    const subs = (await admin.get("/v1/users/me/subscriptions")).body.data;
    expect(
      subs.some((s: { listener_id: string }) => s.listener_id === id),
      "its subscriptions went with it",
    ).to.equal(false);
  });
});

describe("delivery: giving up and retention (real server)", function () {
  this.timeout(120_000);

  it("disables a webhook that keeps failing, says why, and sends again once resumed", async () => {
    const server = new TestServer({
      env: {
        HEADWATER_ALLOW_PRIVATE_NETWORKS: "1",
        HEADWATER_WEBHOOK_RETRY_MS: "100",
        HEADWATER_WEBHOOK_RETRY_MAX_MS: "200",
        HEADWATER_WEBHOOK_DISABLE_AFTER_MS: "1500",
        HEADWATER_DELIVERY_SWEEP_MS: "200",
      },
    });
    const receiver = new Receiver();
    await Promise.all([server.start(), receiver.start()]);
    try {
      const admin = server.client();
      const source = await deploy(admin, EMITTER);
      const hook = (await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/down`)}`)).body.data;
      await admin.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}`);
      receiver.status = 503;
      await fetch(source.configured_props.http.endpoint_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"n":1}',
      });
      const disabled = await eventually(
        "the webhook disabled",
        async () => {
          const w = (await admin.get(`/v1/webhooks/${hook.id}`)).body.data;
          return w.status === "disabled" ? w : undefined;
        },
        20_000,
      );
      expect(disabled.active).to.equal(false);
      expect(disabled.disabled_reason).to.match(/failed for .* h \(\d+ attempts in a row\)/);
      const tries = receiver.received.length;
      expect(tries).to.be.at.least(3);
      // Given up: the last attempt listed shows no next try (the earlier ones keep when theirs was due).
      type Listed = { attempt: number; next_attempt_at_ms: number | null }[];
      const listed = await eventually(
        "the given-up attempt without a next try",
        async () => {
          const all = (await admin.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data as Listed;
          return all[0]?.next_attempt_at_ms === null ? all : undefined;
        },
        5_000,
      );
      expect(listed.length).to.be.at.least(3);
      expect(listed[0].attempt).to.equal(listed.length);
      expect(listed[0].next_attempt_at_ms, "the given-up attempt").to.equal(null);
      expect(listed[1].next_attempt_at_ms, "an earlier attempt").to.be.a("number");
      receiver.status = 200;
      expect((await admin.post(`/v1/webhooks/${hook.id}/resume`)).body.data.status).to.equal("active");
      await fetch(source.configured_props.http.endpoint_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"n":2}',
      });
      const [after] = (await receiver.waitFor((r) => JSON.parse(r.body).event.n === 2, 1)).slice(-1);
      expect(JSON.parse(after.body).event).to.deep.equal({ n: 2 });
    } finally {
      await server.stop();
      await receiver.stop();
    }
  });

  it("records how far the router has routed soon after routing, writes nothing more to the log while nothing happens but lease renewals, and gives the lease up on a graceful stop", async () => {
    const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" } });
    const receiver = new Receiver();
    await Promise.all([server.start(), receiver.start()]);
    const { openEventStore } = await import("../../src/store/open.js");
    const { routedUpTo } = await import("../../src/delivery/router.js");
    const store = await openEventStore(server.eventStoreUrl);
    try {
      const admin = server.client();
      const source = await deploy(admin, EMITTER, {}, "routed");
      const hook = (await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/routed`)}`)).body.data;
      expect((await admin.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.id}`)).status).to.equal(200);
      const sent = await fetch(source.configured_props.http.endpoint_url as string, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"n":1}',
      });
      expect(sent.status).to.equal(200);
      await receiver.waitFor((r) => r.path === "/routed", 1, 20_000);
      const [emitted] = (await store.readStream(`emitter-${source.id as string}`)).filter((e) => e.type === "EventEmitted");
      await eventually("the router's checkpoint past the routed event", async () =>
        (await routedUpTo(store)) >= emitted.position ? true : undefined,
      );
      // A checkpoint is itself an event of the log: one written for every checkpoint it follows
      // would keep an idle node appending thousands of them a second.
      const before = (await store.streamRevision("router")) ?? 0;
      await sleep(3_000);
      const after = (await store.streamRevision("router")) ?? 0;
      expect(after - before, "checkpoints written in 3 s of nothing (a lease renewal every ~3.3 s)").to.be.at.most(2);
      // A graceful stop gives the lease up, so another dispatcher need not wait for it to run out.
      await server.stop();
      const [last] = await store.readStream("router", { direction: "backwards", maxCount: 1 });
      const data = last.data as { position: number; leaseUntil: number; at: number };
      expect(data.leaseUntil, "the lease given up by the last checkpoint").to.be.at.most(data.at);
      expect(data.position).to.be.at.least(emitted.position);
    } finally {
      await store.close();
      await server.stop();
      await receiver.stop();
    }
  });

  it("keeps a listened emitter's events in the log until the router has passed them; an emitter nobody listens to is trimmed at once", async () => {
    const roles = "api,runner,scheduler,projector";
    const env = { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" };
    const server = new TestServer({ env: { ...env, HEADWATER_ROLES: roles } });
    const receiver = new Receiver();
    await Promise.all([server.start(), receiver.start()]);
    const { openEventStore } = await import("../../src/store/open.js");
    const MANY = `export default { name: "Many", version: "1.0.0", props: { http: "$.interface.http" },
        async run() { for (let n = 0; n < 150; n++) this.$emit({ n }); } };`;
    const emitted = async (store: { readStream: (s: string) => Promise<{ type: string }[]> }, id: string) =>
      (await store.readStream(`emitter-${id}`)).filter((e) => e.type === "EventEmitted").length;
    try {
      const admin = server.client();
      const listened = await deploy(admin, MANY, {}, "listened");
      const alone = await deploy(admin, MANY, {}, "alone");
      const hook = (await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/kept`)}`)).body.data;
      expect((await admin.post(`/v1/subscriptions?emitter_id=${listened.id}&listener_id=${hook.id}`)).status).to.equal(200);
      await admin.post(`/v1/sources/${listened.id}/run`, {});
      await admin.post(`/v1/sources/${alone.id}/run`, {});
      const store = await openEventStore(server.eventStoreUrl);
      try {
        await eventually(
          "the unlistened emitter trimmed to the kept window",
          async () => ((await emitted(store, alone.id)) === 100 ? true : undefined),
          20_000,
        );
        expect(await emitted(store, listened.id), "no dispatcher routed them yet: nothing is dropped").to.equal(150);
        await server.stop();
        const full = new TestServer({
          env,
          dataDir: server.dataDir,
          bootstrapKey: server.bootstrapKey,
          ...(server.cluster ? { cluster: server.cluster } : {}),
        });
        await full.start();
        try {
          await eventually(
            "routed, then trimmed to the kept window",
            async () => ((await emitted(store, listened.id)) === 100 ? true : undefined),
            30_000,
          );
          const delivered = await receiver.waitFor((r) => r.path === "/kept", 150, 30_000);
          expect(new Set(delivered.map((r) => JSON.parse(r.body).event.n)).size).to.equal(150);
        } finally {
          await full.stop();
        }
      } finally {
        await store.close();
      }
    } finally {
      await server.stop();
      await receiver.stop();
    }
  });
});
