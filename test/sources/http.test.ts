import http from "node:http";
import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { eventually } from "../harness/receiver.js";

const echo = `export default {
  name: "Echo", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const mode = event.query.mode;
    if (mode === "buffer") this.http.respond({ status: 201, headers: { "content-type": "application/octet-stream" }, body: Buffer.from([0, 1, 2, 255]) });
    else if (mode === "object") this.http.respond({ status: 200, body: { got: event.body } });
    else if (mode === "twice") { this.http.respond({ status: 202, body: "first" }); this.http.respond({ status: 203, body: "second" }); }
    else if (mode === "bad") this.http.respond({ status: 700, body: "x" });
    else if (mode === "throw") throw new Error("kaput");
    else if (mode !== "none") this.http.respond({ status: Number(event.query.status ?? 200), headers: { "x-echo": "yes" }, body: "text body" });
    this.$emit({ method: event.method, path: event.path, query: event.query, headers: event.headers, body: event.body, bodyRaw: event.bodyRaw }, { summary: String(mode) });
  },
};`;

describe("sources: the HTTP interface (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_ENDPOINT_MAX_BODY_BYTES: String(512 * 1024) } });
  let admin: ApiClient;
  let echoUrl: string;
  let echoId: string;
  let payloadUrl: string;
  let payloadId: string;

  const newest = async (id: string, after = 0) =>
    eventually(
      async () => {
        const data = (await admin.get(`/v1/sources/${id}/event_summaries?limit=100&expand=event`)).body.data;
        return data.length > after ? data[0] : undefined;
      },
      10_000,
      "an event",
    );

  before(async () => {
    await server.start();
    admin = server.client();
    const e = (await admin.post("/v1/sources", { component_code: echo })).body.data;
    echoUrl = e.configured_props.http.endpoint_url;
    echoId = e.id;
    const p = (await admin.post("/v1/sources", { key: "http-new-requests" })).body.data;
    payloadUrl = p.configured_props.http.endpoint_url;
    payloadId = p.id;
  });
  after(() => server.stop());

  it("any method and sub-path reach run with method, path, query, lower-case headers, bodyRaw and parsed JSON", async () => {
    const r = await fetch(`${payloadUrl}/deep/sub/path?a=1&a=2&b=x`, {
      method: "PATCH",
      headers: { "Content-Type": "application/json", "X-Custom-Header": "Value" },
      body: JSON.stringify({ k: [1, 2] }),
    });
    expect(r.status).to.equal(200);
    const answer = (await r.json()) as { success: boolean; invocation_id: string };
    expect(answer.success).to.equal(true);
    expect(answer.invocation_id).to.match(/^inv_/);
    const e = (await newest(payloadId)).event;
    expect(e).to.deep.include({
      method: "PATCH",
      path: "/deep/sub/path",
      query: { a: ["1", "2"], b: "x" },
      bodyRaw: '{"k":[1,2]}',
      body: { k: [1, 2] },
    });
    expect(e.headers["x-custom-header"]).to.equal("Value");
    expect(e.headers["content-type"]).to.equal("application/json");
  });

  it("no query string is an empty query; repeated headers arrive joined, Set-Cookie as a list", async () => {
    const count = (await admin.get(`/v1/sources/${payloadId}/event_summaries`)).body.page_info.total_count;
    // node:http, not fetch: fetch would merge the repeated headers before sending them.
    const status = await new Promise<number>((resolve, reject) => {
      const request = http.request(payloadUrl, {
        method: "POST",
        headers: { "X-Repeated": ["one", "two"], "Set-Cookie": ["a=1", "b=2"], "content-type": "application/json" },
      });
      request.on("response", (response) => (response.resume(), resolve(response.statusCode ?? 0)));
      request.on("error", reject);
      request.end('{"n":1}');
    });
    expect(status).to.equal(200);
    const e = (await newest(payloadId, count)).event;
    expect(e.query).to.deep.equal({});
    expect(e.headers["x-repeated"]).to.equal("one, two");
    expect(e.headers["set-cookie"]).to.deep.equal(["a=1", "b=2"]);
    expect(Object.keys(e.headers).every((name) => name === name.toLowerCase())).to.equal(true);
    expect(e.body).to.deep.equal({ n: 1 });
  });

  it("parses form-encoded and multipart bodies; other bodies arrive as text", async () => {
    let count = (await admin.get(`/v1/sources/${payloadId}/event_summaries`)).body.page_info.total_count;
    await fetch(payloadUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "a=1&b=two&b=three",
    });
    expect((await newest(payloadId, count++)).event.body).to.deep.equal({ a: "1", b: ["two", "three"] });

    const form = new FormData();
    form.append("field", "value");
    form.append("upload", new Blob(["file content"], { type: "text/plain" }), "note.txt");
    await fetch(payloadUrl, { method: "POST", body: form });
    const multipart = (await newest(payloadId, count++)).event.body;
    expect(multipart.field).to.equal("value");
    expect(multipart.upload).to.deep.include({ filename: "note.txt", mimeType: "text/plain", size: 12 });
    expect(Buffer.from(multipart.upload.content_base64, "base64").toString()).to.equal("file content");

    await fetch(payloadUrl, { method: "POST", headers: { "content-type": "text/plain" }, body: "just text" });
    expect((await newest(payloadId, count++)).event.body).to.equal("just text");
    await fetch(payloadUrl, { method: "POST", headers: { "content-type": "application/json" }, body: "{broken" });
    const broken = (await newest(payloadId, count)).event;
    expect(broken.body, "unparsable JSON still reaches the run, as text").to.equal("{broken");
  });

  it("custom responses: status, headers and a string, object or buffer body", async () => {
    const text = await fetch(`${echoUrl}?status=418`);
    expect(text.status).to.equal(418);
    expect(text.headers.get("x-echo")).to.equal("yes");
    expect(await text.text()).to.equal("text body");

    const object = await fetch(`${echoUrl}?mode=object`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"x":1}',
    });
    expect(object.status).to.equal(200);
    expect(await object.json()).to.deep.equal({ got: { x: 1 } });

    const buffer = await fetch(`${echoUrl}?mode=buffer`);
    expect(buffer.status).to.equal(201);
    expect([...new Uint8Array(await buffer.arrayBuffer())]).to.deep.equal([0, 1, 2, 255]);
  });

  it("the first respond wins; the answer comes after the run's event is stored", async () => {
    const r = await fetch(`${echoUrl}?mode=twice`);
    expect(r.status).to.equal(202);
    expect(await r.text()).to.equal("first");
    // Already stored when the answer arrived: no waiting needed.
    const latest = (await admin.get(`/v1/sources/${echoId}/event_summaries?limit=1&expand=event`)).body.data[0];
    expect(latest.metadata.summary).to.equal("twice");
  });

  it("a status outside 100..599 is an error of the run; no respond gives 204; a throwing run gives 500 and an $errors event", async () => {
    const bad = await fetch(`${echoUrl}?mode=bad`);
    expect(bad.status).to.equal(500);
    expect(((await bad.json()) as { code: string }).code).to.equal("run_failed");

    const none = await fetch(`${echoUrl}?mode=none`);
    expect(none.status).to.equal(204);

    const thrown = await fetch(`${echoUrl}?mode=throw`);
    expect(thrown.status).to.equal(500);
    const body = (await thrown.json()) as { error: string };
    expect(body.error).to.include("kaput");
    const errors = (await admin.get(`/v1/sources/${echoId}/event_summaries?event_name=$errors&expand=event`)).body.data;
    const kaput = errors.find((e: { event: { error: { message: string } } }) => e.event.error.message === "kaput");
    expect(kaput.metadata.name).to.equal("$errors");
    expect(kaput.event.original_event.query).to.deep.equal({ mode: "throw" });
  });

  it("OPTIONS answers CORS", async () => {
    const r = await fetch(echoUrl, {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "x-thing" },
    });
    expect(r.status).to.equal(204);
    expect(r.headers.get("access-control-allow-origin")).to.equal("*");
    expect(r.headers.get("access-control-allow-methods")).to.include("POST");
    expect(r.headers.get("access-control-allow-headers")).to.include("x-thing");
  });

  it("other requests' answers carry the CORS headers, errors' too", async () => {
    const queued = await fetch(payloadUrl, { method: "POST", headers: { origin: "https://app.example" }, body: "x" });
    expect(queued.status).to.equal(200);
    const custom = await fetch(`${echoUrl}?status=201`, { headers: { origin: "https://app.example" } });
    expect(custom.status).to.equal(201);
    const unknown = await fetch(`${server.url}/e/${"b".repeat(24)}`, { method: "POST", body: "x" });
    expect(unknown.status).to.equal(404);
    for (const r of [queued, custom, unknown]) {
      expect(r.headers.get("access-control-allow-origin")).to.equal("*");
      expect(r.headers.get("vary")).to.match(/\bOrigin\b/);
    }
  });

  it("unknown endpoints are 404, bodies over 512 KB are 413", async () => {
    const unknown = await fetch(`${server.url}/e/${"a".repeat(24)}`, { method: "POST", body: "x" });
    expect(unknown.status).to.equal(404);
    const before = (await admin.get(`/v1/sources/${payloadId}/event_summaries`)).body.page_info.total_count;
    const big = await fetch(payloadUrl, { method: "POST", body: "x".repeat(600 * 1024) });
    expect(big.status).to.equal(413);
    await new Promise((r) => setTimeout(r, 300));
    expect((await admin.get(`/v1/sources/${payloadId}/event_summaries`)).body.page_info.total_count).to.equal(before);
  });
});

describe("sources: endpoint rate limit (real server)", function () {
  this.timeout(60_000);
  it("answers 429 with Retry-After past the burst, and recovers", async () => {
    const server = new TestServer({ env: { HEADWATER_ENDPOINT_RATE_PER_SECOND: "2", HEADWATER_ENDPOINT_BURST: "3" } });
    await server.start();
    try {
      const url = (await server.client().post("/v1/sources", { key: "http-new-requests" })).body.data.configured_props.http.endpoint_url;
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await fetch(url, { method: "POST", body: String(i) })).status);
      expect(statuses.slice(0, 3)).to.deep.equal([200, 200, 200]);
      expect(statuses).to.include(429);
      const limited = await fetch(url, { method: "POST", body: "again" });
      expect(limited.status).to.equal(429);
      expect(Number(limited.headers.get("retry-after"))).to.be.at.least(1);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await fetch(url, { method: "POST", body: "later" })).status).to.equal(200);
    } finally {
      await server.stop();
    }
  });
});
