import { expect } from "chai";
import { TestServer } from "../harness/server.js";

// Stream tokens: how a browser's EventSource (no Authorization header) opens a source's SSE stream.
// Minted by an authenticated POST, for one source, used once, tied to the minting key.

const EMITTER = `export default {
  name: "token emitter",
  version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit(event.body); },
};`;

/** Reads a streaming response until `done` says so (or the time runs out), returning the text. */
async function readUntil(response: Response, done: (text: string) => boolean, timeoutMs = 10_000): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  try {
    while (!done(text)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`stream did not say what was expected in ${timeoutMs} ms; got:\n${text}`);
      const chunk = await Promise.race([reader.read(), new Promise<undefined>((r) => setTimeout(() => r(undefined), left))]);
      if (!chunk) continue;
      if (chunk.done) break;
      text += decoder.decode(chunk.value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text;
}

describe("stream tokens for browsers' EventSource (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_SSE_HEARTBEAT_MS: "300" } });
  let source: { id: string; configured_props: { http: { endpoint_url: string } } };
  let other: { id: string };

  before(async () => {
    await server.start();
    const admin = server.client();
    source = (await admin.post("/v1/sources", { component_code: EMITTER, name: "tokens" })).body.data;
    other = (await admin.post("/v1/sources", { component_code: EMITTER, name: "tokens-other" })).body.data;
    for (const n of [1, 2]) {
      await fetch(source.configured_props.http.endpoint_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"n":${n}}`,
      });
    }
    await server.client().get(`/v1/sources/${source.id}/event_summaries`); // the two events are kept
  });
  after(() => server.stop());

  const mint = async (id: string, key = server.bootstrapKey) => {
    const r = await server.client(key).post(`/v1/sources/${id}/stream_tokens`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data as { token: string; expires_at: number; url: string };
  };

  it("is minted only with a key, for a source the caller can see", async () => {
    expect((await server.anonymous().post(`/v1/sources/${source.id}/stream_tokens`)).status).to.equal(401);
    expect((await server.client().post(`/v1/sources/dc_doesnotexist/stream_tokens`)).status).to.equal(404);
    const stranger = server.cli("admin", "user", "create", "--username", "stranger", "--email", "stranger@example.com");
    expect((await server.client(stranger.json.api_key).post(`/v1/sources/${source.id}/stream_tokens`)).status).to.equal(404);
    const minted = await mint(source.id);
    expect(minted.token).to.match(/^st_/);
    expect(minted.expires_at - Math.floor(Date.now() / 1000)).to.be.within(50, 61);
    expect(minted.url).to.equal(`${server.url}/sources/${source.id}/sse?stream_token=${encodeURIComponent(minted.token)}`);
  });

  it("opens the stream once, resuming after last_event_id, and is refused the second time", async () => {
    const { url } = await mint(source.id);
    const first = await fetch(`${url}&last_event_id=0-0`);
    expect(first.status).to.equal(200);
    expect(first.headers.get("content-type")).to.match(/^text\/event-stream/);
    const text = await readUntil(first, (t) => t.includes('"n":2'));
    expect(text).to.include('"n":1');

    const again = await fetch(url);
    expect(again.status).to.equal(401);
    expect(((await again.json()) as any).error).to.match(/already used/);
  });

  it("a request refused before its stream opened (a bad parameter) does not spend the token", async () => {
    const { url } = await mint(source.id);
    const bad = await fetch(`${url}&bogus=1`);
    expect(bad.status).to.equal(400);
    const opened = await fetch(url);
    expect(opened.status, "the token still opens its stream once").to.equal(200);
    await opened.body?.cancel();
    const again = await fetch(url);
    expect(again.status).to.equal(401);
    expect(((await again.json()) as any).error).to.match(/already used/);
  });

  it("with an Authorization header, the header alone decides: the token is neither used nor spent", async () => {
    const { url } = await mint(source.id);
    const wrongKey = await fetch(url, { headers: { authorization: "Bearer hw_not_a_key" } });
    expect(wrongKey.status, "a bad header is not rescued by a good token").to.equal(401);
    expect(((await wrongKey.json()) as any).error).to.match(/unknown or revoked/);
    const withKey = await fetch(url, { headers: { authorization: `Bearer ${server.bootstrapKey}` } });
    expect(withKey.status).to.equal(200);
    await withKey.body?.cancel();
    const opened = await fetch(url);
    expect(opened.status, "the token still opens its stream once").to.equal(200);
    await opened.body?.cancel();
  });

  it("opens only the stream of its own source, and nothing else", async () => {
    const { token } = await mint(source.id);
    const wrongSource = await fetch(`${server.url}/sources/${other.id}/sse?stream_token=${encodeURIComponent(token)}`);
    expect(wrongSource.status).to.equal(401);
    expect(((await wrongSource.json()) as any).error).to.match(/another source/);
    const api = await fetch(`${server.url}/v1/users/me?stream_token=${encodeURIComponent(token)}`);
    expect(api.status).to.equal(401);
    const forged = await fetch(`${server.url}/sources/${source.id}/sse?stream_token=${encodeURIComponent(token.slice(0, -2) + "xx")}`);
    expect(forged.status).to.equal(401);
  });

  it("a stream opened with a token ends when the key that minted it is revoked", async () => {
    const user = server.cli("admin", "user", "create", "--username", "revokee", "--email", "revokee@example.com");
    const mine = (await server.client(user.json.api_key).post("/v1/sources", { component_code: EMITTER, name: "mine" })).body.data;
    const { url } = await mint(mine.id, user.json.api_key);
    const stream = await fetch(url);
    expect(stream.status).to.equal(200);
    const revoked = server.cli("admin", "key", "revoke", user.json.api_key);
    expect(revoked.status, revoked.stderr).to.equal(0);
    const text = await readUntil(stream, (t) => t.includes("event: end"));
    expect(text).to.include("access revoked");
  });
});
