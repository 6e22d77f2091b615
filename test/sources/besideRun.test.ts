import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver } from "../harness/receiver.js";
import { deploy, eventually, events } from "./sourcesSupport.js";

// A custom-response request to a source whose run has been waiting in the sandbox for a second is
// also run beside that run, answer-only (src/runner/sourceRunner.ts, besideIfLong). The case it is
// for: a provider that checks the source's endpoint before it answers the call the run made
// (Microsoft Graph validates a subscription so), which in turn would wait for the run, which waits
// for it. Over real HTTP against the real server, with a loopback "provider".

const HANDSHAKE = `export default {
  name: "Handshake",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: true }, target: { type: "string" } },
  async run(event) {
    const query = event.query ?? {};
    const body = event.body ?? {};
    if (query.validationToken) {
      this.http.respond({ status: 200, headers: { "content-type": "text/plain" }, body: query.validationToken });
      return;
    }
    if (body.subscribe) {
      const r = await fetch(this.target + "/subscriptions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ notificationUrl: this.http.endpoint, token: body.subscribe }),
      });
      const got = await r.json();
      this.$emit({ subscribed: got });
      this.http.respond({ status: 200, body: { subscribed: got } });
      return;
    }
    if (body.sleep) await new Promise((resolve) => setTimeout(resolve, body.sleep));
    if (body.ping) {
      // Emits nothing, writes nothing: only the request it sends tells it from a pure answer.
      const pong = await fetch(this.target + "/ping?n=" + body.ping).then((r) => r.text(), () => "refused");
      this.http.respond({ status: 200, body: { pinged: pong } });
      return;
    }
    this.$emit({ note: body.note ?? null });
    this.http.respond({ status: 200, body: { noted: body.note ?? null } });
  },
};`;

describe("sources: a request beside a run that waits (real server, a loopback provider)", function () {
  this.timeout(90_000);
  const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1" } });
  const provider = new Receiver();
  let admin: ApiClient;

  before(async () => {
    await Promise.all([server.start(), provider.start()]);
    admin = server.client();
    // As Graph does: before it answers the subscription, it calls the notification URL with a
    // token and wants it echoed within a few seconds.
    provider.routes.set("/ping", (_req, res) => res.end("pong"));
    provider.routes.set("/subscriptions", (_req, res, body) => {
      const { notificationUrl, token } = JSON.parse(body) as { notificationUrl: string; token: string };
      void fetch(`${notificationUrl}?validationToken=${encodeURIComponent(token)}`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        signal: AbortSignal.timeout(5_000),
      })
        .then(async (r) => ({ status: r.status, text: await r.text() }))
        .catch((error: Error) => ({ status: 0, text: error.name }))
        .then((answer) => {
          res.writeHead(201, { "content-type": "application/json" });
          res.end(JSON.stringify({ validated: answer.status === 200 && answer.text === token, answer: answer.text }));
        });
    });
  });
  after(() => Promise.all([server.stop(), provider.stop()]));

  const post = async (endpoint: string, body: unknown) => {
    const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: r.status, body: await r.json(), at: Date.now() };
  };

  it("a provider's check of the endpoint, made while the run that called it waits, is answered beside that run", async () => {
    const source = await deploy(admin, HANDSHAKE, { target: provider.url }, "handshake");
    const endpoint = source.configured_props.http.endpoint_url as string;
    const answered = await post(endpoint, { subscribe: "tok-1" });
    expect(answered).to.deep.include({ status: 200, body: { subscribed: { validated: true, answer: "tok-1" } } });
    // The check also ran in its turn, after the run (recorded and logged as any run); it emitted nothing.
    const emitted = await eventually("the run's event", async () => {
      const list = await events(admin, source.id);
      return list.length > 0 ? list : undefined;
    });
    expect(emitted.map((e) => e.event)).to.deep.equal([{ subscribed: { validated: true, answer: "tok-1" } }]);
    const logs = await eventually("both runs logged", async () => {
      const r = await admin.get(`/v1/sources/${source.id}/logs`);
      return (r.body.data as unknown[]).length >= 2 ? (r.body.data as { ok: boolean }[]) : undefined;
    });
    expect(logs.map((l) => l.ok)).to.deep.equal([true, true]);
  });

  it("a request that emits is not answered beside the run: it waits its turn, and events keep their order", async () => {
    const source = await deploy(admin, HANDSHAKE, { target: provider.url }, "in order");
    const endpoint = source.configured_props.http.endpoint_url as string;
    const slow = post(endpoint, { sleep: 2_500, note: "a" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const next = await post(endpoint, { note: "b" });
    const first = await slow;
    expect(first.body).to.deep.equal({ noted: "a" });
    expect(next.body).to.deep.equal({ noted: "b" });
    expect(next.at).to.be.at.least(first.at);
    const list = await eventually("both events", async () => {
      const got = await events(admin, source.id);
      return got.length >= 2 ? got : undefined;
    });
    expect(list.map((e) => e.event)).to.deep.equal([{ note: "a" }, { note: "b" }]);
  });

  it("a request that reaches out is not answered beside the run, and its request is sent once, in its turn", async () => {
    const source = await deploy(admin, HANDSHAKE, { target: provider.url }, "reaches out");
    const endpoint = source.configured_props.http.endpoint_url as string;
    const pings = () => provider.received.filter((r) => r.path === "/ping?n=7").length;
    const slow = post(endpoint, { sleep: 2_500, note: "c" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const next = await post(endpoint, { ping: 7 });
    const first = await slow;
    expect(next.body).to.deep.equal({ pinged: "pong" });
    expect(next.at).to.be.at.least(first.at);
    expect(pings()).to.equal(1);
  });
});
