import { expect } from "chai";
import net from "node:net";
import { TestServer, type ApiClient } from "../harness/server.js";
import { deploy, eventually, events } from "../sources/sourcesSupport.js";

// What a client on the internet can send, tried as an attacker would, against the real server
// process: after every attack the node still answers, other sources still run, and nothing that
// was acknowledged is lost.

const nested = (depth: number, leaf = "1") => "[".repeat(depth) + leaf + "]".repeat(depth);
const nestedObject = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);

const RESPONDER = `export default {
  name: "Responder", version: "1.0.0",
  props: { http: { type: "$.interface.http", customResponse: true } },
  async run(event) {
    const q = event.query;
    this.$emit({ mode: q.mode }, { summary: String(q.mode) });
    if (q.mode === "crlf") this.http.respond({ status: 200, headers: { "x-a": "ok\\r\\nSet-Cookie: hw=1" }, body: "x" });
    else if (q.mode === "badname") this.http.respond({ status: 200, headers: { "bad name": "x" }, body: "x" });
    else if (q.mode === "switch") this.http.respond({ status: 101, headers: { upgrade: "websocket", connection: "upgrade" } });
    else if (q.mode === "cookie") this.http.respond({ status: 200, headers: { "set-cookie": "session=stolen; Path=/v1", "content-type": "text/html", "x-kept": "yes" }, body: "<script>fetch('/v1/users/me')</script>" });
    else if (q.mode === "silent") {}
    else this.http.respond({ status: 200, body: "fine" });
  },
};`;

describe("abuse: hostile requests (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: { HEADWATER_RESPONSE_TIMEOUT_MS: "1500", HEADWATER_ANONYMOUS_BURST: "30", HEADWATER_ANONYMOUS_RATE_PER_SECOND: "5" },
  });
  let admin: ApiClient;
  let echo: { id: string; url: string };
  let responder: { id: string; url: string };
  /** Acknowledged endpoint requests, by marker: each must end up as exactly one event. */
  const acknowledged: string[] = [];

  const endpoint = (source: any) => ({ id: source.id as string, url: source.configured_props.http.endpoint_url as string });
  const send = (url: string, body: string | Buffer, contentType: string) =>
    fetch(url, { method: "POST", headers: { "content-type": contentType }, body });

  /** The node answers the API and a normal request still runs to an event. */
  async function stillServing(): Promise<void> {
    expect((await admin.get("/v1/users/me")).status).to.equal(200);
    const marker = `alive-${acknowledged.length}`;
    const r = await send(echo.url, JSON.stringify({ marker }), "application/json");
    expect(r.status).to.equal(200);
    acknowledged.push(marker);
    await eventually(`event ${marker}`, async () =>
      (await events(admin, echo.id)).some((e) => e.event.body?.marker === marker) ? true : undefined,
    );
  }

  before(async () => {
    await server.start();
    admin = server.client();
    echo = endpoint((await admin.post("/v1/sources", { key: "http-new-requests" })).body.data);
    responder = endpoint(await deploy(admin, RESPONDER));
  });
  after(() => server.stop());

  it("refuses JSON nested deeper than 120 levels at endpoints and in API bodies (400), up to 100,000 levels", async () => {
    for (const depth of [121, 2_000, 100_000]) {
      for (const text of [nested(depth), nestedObject(depth)]) {
        const r = await send(echo.url, text, "application/json");
        // Deep and huge is over the endpoint's body limit first (413); deep alone is refused as such (400).
        const code = ((await r.json()) as { code: string }).code;
        if (text.length > 512 * 1024) expect([r.status, code], `endpoint, depth ${depth}`).to.deep.equal([413, "payload_too_large"]);
        else expect([r.status, code], `endpoint, depth ${depth}`).to.deep.equal([400, "json_too_deep"]);
        const run = await admin.request("POST", `/v1/sources/${echo.id}/run`, `{"event":${text}}`, { "content-type": "application/json" });
        expect(run.status, `/run, depth ${depth}`).to.equal(400);
        expect(run.body.code).to.equal("json_too_deep");
        const created = await admin.request("POST", "/v1/sources", `{"key":"http-new-requests","configured_props":{"x":${text}}}`, {
          "content-type": "application/json",
        });
        expect(created.status, `configured_props, depth ${depth}`).to.equal(400);
      }
    }
    // 120 levels are accepted, and still fit once wrapped in the HTTP event and emitted.
    const ok = await send(echo.url, nestedObject(120), "application/json");
    expect(ok.status, "120 levels are fine").to.equal(200);
    await eventually("the deep event emitted", async () => {
      const found = (await events(admin, echo.id)).find((e) => e.event.bodyRaw === nestedObject(120));
      return found ? true : undefined;
    });
    await stillServing();
  });

  it("answers 413 for bodies over the limits, before reading them", async () => {
    const big = "x".repeat(600 * 1024);
    expect((await send(echo.url, JSON.stringify({ big }), "application/json")).status).to.equal(413);
    const r = await admin.request("POST", "/v1/sources", JSON.stringify({ key: "http-new-requests", name: "x".repeat(1100 * 1024) }), {
      "content-type": "application/json",
    });
    expect(r.status).to.equal(413);
    await stillServing();
  });

  it("survives truncated and malformed multipart and urlencoded bodies (the run gets the raw text)", async () => {
    const boundary = "----hwboundary";
    const bodies: [string, string][] = [
      [
        `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nunfinished file`,
        `multipart/form-data; boundary=${boundary}`,
      ],
      [`--${boundary}\r\nContent-Disposition: form-data; name="f"\r\n\r\nvalue`, `multipart/form-data; boundary=${boundary}`],
      [`--${boundary}\r\nbroken headers without end`, `multipart/form-data; boundary=${boundary}`],
      ["no boundary at all", "multipart/form-data"],
      ["garbage", `multipart/form-data; boundary=`],
      ["%zz=%%%&a=%E0%A4%A&" + "k".repeat(10_000) + "=v", "application/x-www-form-urlencoded"],
      ["\u0000\u0001\u0002", "application/x-www-form-urlencoded"],
    ];
    for (const [body, type] of bodies) {
      const r = await send(echo.url, body, type);
      expect(r.status, `${type}: ${body.slice(0, 40)}`).to.equal(200);
    }
    await eventually("the truncated upload as raw text", async () =>
      (await events(admin, echo.id)).some((e) => e.event.bodyRaw === bodies[0][0]) ? true : undefined,
    );
    await stillServing();
  });

  it("refuses every non-finite, non-decimal or out-of-range listing parameter with 400", async () => {
    const bad = ["Infinity", "-Infinity", "1e400", "1e2", "NaN", "0x10", "5.0", "0", "-1", "101", "", " 5", "9".repeat(30), "1,2"];
    const paths = [
      "/v1/users/me/sources",
      `/v1/sources/${echo.id}/event_summaries`,
      `/v1/sources/${echo.id}/logs`,
      "/v1/users/me/api_keys",
    ];
    for (const path of paths) {
      for (const value of bad) {
        const r = await admin.get(`${path}?limit=${encodeURIComponent(value)}`);
        expect(r.status, `${path}?limit=${value}: ${JSON.stringify(r.body)}`).to.equal(400);
        expect(r.body.code).to.equal("invalid_request");
      }
    }
    for (const value of ["Infinity", "1e400", "0"]) {
      expect((await admin.get(`/v1/sources/${echo.id}/event_summaries?n=${value}`)).status, `n=${value}`).to.equal(400);
    }
    for (const cursor of [
      "x",
      "eyJwIjoxZTQwMH0",
      Buffer.from('{"p":1e400}').toString("base64url"),
      Buffer.from('{"p":"1"}').toString("base64url"),
    ]) {
      expect((await admin.get(`/v1/users/me/sources?after=${cursor}`)).status, `after=${cursor}`).to.equal(400);
    }
    await stillServing();
  });

  it("never lets a component inject headers, set cookies, switch protocols or run script as the API origin", async () => {
    for (const mode of ["crlf", "badname", "switch"]) {
      const r = await fetch(`${responder.url}?mode=${mode}`);
      expect(r.status, mode).to.equal(500);
      const body = (await r.json()) as { code: string; error: string };
      expect(body.code, mode).to.equal("run_failed");
      expect(r.headers.get("set-cookie"), mode).to.equal(null);
    }
    const page = await fetch(`${responder.url}?mode=cookie`);
    expect(page.status).to.equal(200);
    expect(page.headers.get("set-cookie"), "cookies are dropped").to.equal(null);
    expect(page.headers.get("x-kept")).to.equal("yes");
    expect(page.headers.get("content-security-policy")).to.match(/\bsandbox\b/);
    expect(page.headers.get("x-content-type-options")).to.equal("nosniff");
    // The run's events are kept whatever its response was.
    const modes = (await events(admin, responder.id)).map((e) => e.event.mode);
    expect(modes).to.include.members(["crlf", "badname", "switch", "cookie"]);
    await stillServing();
  });

  it("answers 504 when a custom response does not come back in time", async () => {
    const slow = endpoint(
      await deploy(
        admin,
        `export default {
      name: "Slow", version: "1.0.0",
      props: { http: { type: "$.interface.http", customResponse: true } },
      async run() { await new Promise((r) => setTimeout(r, 4000)); this.http.respond({ status: 200, body: "late" }); },
    };`,
      ),
    );
    const r = await fetch(slow.url);
    expect(r.status).to.equal(504);
    expect(((await r.json()) as { code: string }).code).to.equal("run_timeout");
    await stillServing();
  });

  it("rate-limits requests without a valid key per address (429 with Retry-After), and valid keys keep working", async () => {
    const stranger = server.client("hw_" + "x".repeat(40));
    let limited: { status: number; body: any; headers: Headers } | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const r = await stranger.get("/v1/users/me");
      if (r.status === 429) limited = r;
      else expect(r.status).to.equal(401);
    }
    expect(limited, "unknown keys are eventually refused").to.not.equal(undefined);
    expect(limited!.body.code).to.equal("rate_limited");
    expect(Number(limited!.headers.get("retry-after"))).to.be.at.least(1);
    expect((await admin.get("/v1/users/me")).status, "a valid key from the same address still works").to.equal(200);
  });

  it("answers malformed HTTP without a crash", async () => {
    for (const raw of [
      "GARBAGE\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
      "POST /v1/sources HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ]) {
      await new Promise<void>((resolve) => {
        const socket = net.connect(Number(new URL(server.url).port), "127.0.0.1", () => socket.end(raw));
        socket.on("error", () => resolve());
        socket.on("close", () => resolve());
        socket.resume();
      });
    }
    await stillServing();
  });

  it("lost nothing it acknowledged", async () => {
    const seen = (await events(admin, echo.id)).map((e) => e.event.body?.marker).filter((m) => typeof m === "string");
    for (const marker of acknowledged)
      expect(
        seen.filter((m) => m === marker),
        marker,
      ).to.have.length(1);
  });
});
