import { expect } from "chai";
import net from "node:net";
import { EventSource, type FetchLike } from "eventsource";
import { TestServer, type ApiClient } from "../harness/server.js";
import { loadConfig } from "../../src/config.js";

// Server-sent events of a source, with a real EventSource client against the real server process.

/** Emits `count` events (optionally padded to `pad` characters) on `channel`, and logs one line. */
const FIXTURE = `
export default {
  key: "sse-fixture",
  name: "SSE fixture",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: false } },
  async run(event) {
    const b = event.body || {};
    const count = b.count ?? 1;
    for (let i = 0; i < count; i++) {
      this.$emit({ n: b.n, i, ...(b.pad ? { pad: "x".repeat(b.pad) } : {}) }, { name: b.channel, summary: "n=" + b.n + "." + i });
    }
    console.log("ran n=" + b.n);
  },
};
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** fetch with the API key (and, on the first connection only, a stored Last-Event-ID). */
function authorizedFetch(key: string | undefined, firstLastEventId?: string): FetchLike {
  let first = true;
  return (url, init) => {
    const headers: Record<string, string> = { ...init.headers };
    if (key) headers.authorization = `Bearer ${key}`;
    if (first && firstLastEventId && !("Last-Event-ID" in headers)) headers["Last-Event-ID"] = firstLastEventId;
    first = false;
    return fetch(url, { ...init, headers });
  };
}

interface Received {
  readonly id: string;
  readonly data: any;
  readonly type: string;
}

/** An EventSource that records what it receives. */
class Stream {
  readonly es: EventSource;
  readonly received: Received[] = [];
  readonly errors: { code: number | undefined; message: string | undefined }[] = [];
  opens = 0;

  constructor(url: string, key: string | undefined, options: { lastEventId?: string; events?: string[] } = {}) {
    this.es = new EventSource(url, { fetch: authorizedFetch(key, options.lastEventId) });
    const record = (e: MessageEvent) => this.received.push({ id: e.lastEventId, data: JSON.parse(e.data as string), type: e.type });
    this.es.addEventListener("message", record);
    for (const type of options.events ?? []) this.es.addEventListener(type, record);
    this.es.addEventListener("open", () => this.opens++);
    this.es.addEventListener("error", (e) => this.errors.push({ code: e.code, message: e.message }));
  }

  opened(): Promise<void> {
    return until("the stream to open", () => this.es.readyState === EventSource.OPEN || undefined).then(() => undefined);
  }

  count(n: number, timeoutMs = 15_000): Promise<Received[]> {
    return until(
      `${n} messages (have ${this.received.length})`,
      () => (this.received.length >= n ? this.received.slice(0, n) : undefined),
      timeoutMs,
    );
  }

  get ids(): string[] {
    return this.received.map((r) => r.id);
  }

  close(): void {
    this.es.close();
  }
}

/** Reads a raw text/event-stream with fetch, keeping comments (which EventSource hides) with arrival times. */
async function rawStream(url: string, key: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}`, ...headers }, signal: controller.signal });
  const lines: { at: number; line: string }[] = [];
  let ended = false;
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        const parts = buffered.split("\n");
        buffered = parts.pop()!;
        for (const line of parts) lines.push({ at: Date.now(), line });
      }
      ended = true;
    } catch {
      // aborted by us
    }
  })();
  return {
    response,
    lines,
    get ended() {
      return ended;
    },
    async close() {
      controller.abort();
      await reading;
    },
  };
}

/** A TCP proxy in front of the server whose connections can be cut, to make a real EventSource reconnect. */
class CuttableProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  refusing = false;
  port = 0;

  constructor(private readonly target: URL) {
    this.#server = net.createServer((client) => {
      if (this.refusing) return client.destroy();
      const upstream = net.connect(Number(this.target.port), this.target.hostname);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as net.AddressInfo).port;
  }

  cut(): void {
    this.refusing = true;
    for (const s of this.#sockets) s.destroy();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

describe("source SSE stream (real server, real EventSource)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: { HEADWATER_SSE_HEARTBEAT_MS: "300", HEADWATER_ENDPOINT_RATE_PER_SECOND: "10000", HEADWATER_ENDPOINT_BURST: "10000" },
  });
  let admin: ApiClient;
  const streams: Stream[] = [];
  const open = (...args: ConstructorParameters<typeof Stream>) => {
    const stream = new Stream(...args);
    streams.push(stream);
    return stream;
  };

  before(async () => {
    await server.start();
    admin = server.client();
  });
  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });
  after(() => server.stop());

  /** A new source running the fixture: its id, endpoint and SSE URL. */
  async function newSource(client: ApiClient = admin) {
    const r = await client.post("/v1/sources", { component_code: FIXTURE, name: `sse-${Math.random().toString(36).slice(2, 10)}` });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const id = r.body.data.id as string;
    const endpoint = r.body.data.configured_props.http.endpoint_url as string;
    return { id, endpoint, sse: `${server.url}/sources/${id}/sse` };
  }

  async function post(endpoint: string, body: Record<string, unknown>): Promise<void> {
    const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(r.status, await r.text()).to.equal(200);
  }

  /** Kept events, oldest first, as GET event_summaries?expand=event lists them. */
  async function listed(id: string, query = "") {
    const r = await admin.get(`/v1/sources/${id}/event_summaries?expand=event&limit=100${query}`);
    expect(r.status).to.equal(200);
    return (r.body.data as any[]).slice().reverse();
  }

  describe("authentication", () => {
    it("answers 401 without a key, for a raw request and for EventSource", async () => {
      const { sse } = await newSource();
      const raw = await fetch(sse);
      expect(raw.status).to.equal(401);
      expect(await raw.json()).to.include({ code: "unauthorized" });
      expect(raw.headers.get("www-authenticate")).to.match(/^Bearer/);

      const stream = open(sse, undefined);
      await until("the connection to fail", () => stream.es.readyState === EventSource.CLOSED || undefined);
      expect(stream.errors.map((e) => e.code)).to.deep.equal([401]);
      expect(stream.opens).to.equal(0);
    });

    it("answers 404 for another user's source, like an unknown one", async () => {
      const created = server.cli("admin", "user", "create", "--username", "sse-other", "--email", "sse-other@example.com");
      expect(created.status, created.stderr).to.equal(0);
      const theirs = await newSource(server.client(created.json.api_key));
      const mine = await newSource();

      const stranger = await fetch(theirs.sse, { headers: { authorization: `Bearer ${server.bootstrapKey}` } });
      expect(stranger.status).to.equal(404);
      expect(await stranger.json()).to.include({ code: "not_found" });
      const unknown = await fetch(`${server.url}/sources/dc_doesnotexist000/sse`, {
        headers: { authorization: `Bearer ${server.bootstrapKey}` },
      });
      expect(unknown.status).to.equal(404);

      const stream = open(mine.sse, created.json.api_key);
      await until("the connection to fail", () => stream.es.readyState === EventSource.CLOSED || undefined);
      expect(stream.errors.map((e) => e.code)).to.deep.equal([404]);

      const owner = open(theirs.sse, created.json.api_key);
      await owner.opened();
    });
  });

  describe("message format", () => {
    it("streams each event as id: <event id> and data: the event_summaries?expand=event item", async () => {
      const { id, endpoint, sse } = await newSource();
      const stream = open(sse, server.bootstrapKey);
      await stream.opened();
      await post(endpoint, { n: 1 });
      await post(endpoint, { n: 2, count: 2 });
      await post(endpoint, { n: 3, pad: 5000 }); // over 1 KB: listings shorten it unless expand=event

      const got = await stream.count(4);
      const kept = await listed(id);
      expect(kept).to.have.length(4);
      expect(got.map((m) => m.data)).to.deep.equal(kept);
      expect(got.map((m) => m.id)).to.deep.equal(kept.map((e) => e.id));
      expect(got.every((m) => m.type === "message")).to.equal(true);
      expect(got[3].data.event.pad).to.have.length(5000);
      expect(got[0].data).to.deep.include({ event: { n: 1, i: 0 } });
      // Issue 10: emit_id is a string on every event; without an id given, the event's own id.
      expect(got[0].data.metadata).to.deep.equal({ emit_id: got[0].id, name: "", emitter_id: id, summary: "n=1.0" });
    });

    it("sends the stream headers and frames the data on one line", async () => {
      const { endpoint, sse } = await newSource();
      const raw = await rawStream(sse, server.bootstrapKey);
      try {
        expect(raw.response.status).to.equal(200);
        expect(raw.response.headers.get("content-type")).to.equal("text/event-stream; charset=utf-8");
        expect(raw.response.headers.get("cache-control")).to.match(/no-cache/);
        await post(endpoint, { n: "two\nlines\r\nand more" });
        const data = await until("a data line", () => raw.lines.find((l) => l.line.startsWith("data: ")));
        const index = raw.lines.indexOf(data);
        const idLine = raw.lines[index - 1].line;
        expect(idLine).to.match(/^id: \d+-\d+$/);
        const summary = JSON.parse(data.line.slice("data: ".length));
        expect(summary.id).to.equal(idLine.slice("id: ".length));
        expect(summary.event.n).to.equal("two\nlines\r\nand more");
        await until("the blank line ending the frame", () => (raw.lines.length > index + 1 ? true : undefined));
        expect(raw.lines[index + 1].line).to.equal("");
      } finally {
        await raw.close();
      }
    });
  });

  describe("resuming with Last-Event-ID", () => {
    it("sends exactly the kept events after the given id, in order, then live ones", async () => {
      const { id, endpoint, sse } = await newSource();
      for (let n = 1; n <= 5; n++) await post(endpoint, { n });
      const kept = await until("5 kept events", async () => {
        const events = await listed(id);
        return events.length === 5 ? events : undefined;
      });

      const stream = open(sse, server.bootstrapKey, { lastEventId: kept[1].id });
      await stream.count(3);
      await post(endpoint, { n: 6 });
      await stream.count(4);
      await sleep(300);
      expect(stream.received.slice(0, 3).map((m) => m.data)).to.deep.equal(kept.slice(2));
      expect(stream.received.map((m) => m.data.event.n)).to.deep.equal([3, 4, 5, 6]);

      // An id before every kept event (e.g. one retention already dropped) replays all of them.
      const all = open(sse, server.bootstrapKey, { lastEventId: "1-0" });
      await all.count(6);
      expect(all.received.map((m) => m.data.event.n)).to.deep.equal([1, 2, 3, 4, 5, 6]);
      // The newest id: nothing to replay.
      const none = open(sse, server.bootstrapKey, { lastEventId: stream.ids[3] });
      await none.opened();
      await post(endpoint, { n: 7 });
      await none.count(1);
      await sleep(300);
      expect(none.received.map((m) => m.data.event.n)).to.deep.equal([7]);
    });

    it("a real EventSource that loses its connection gets exactly the missed events, in order, without duplicates", async () => {
      const { id, endpoint, sse } = await newSource();
      const proxy = new CuttableProxy(new URL(server.url));
      await proxy.start();
      try {
        const stream = open(sse.replace(new URL(server.url).host, `127.0.0.1:${proxy.port}`), server.bootstrapKey);
        await stream.opened();
        for (let n = 1; n <= 3; n++) await post(endpoint, { n });
        await stream.count(3);

        proxy.cut(); // the client sees the connection drop and retries (every 3 s) against a closed door
        await until("the client to notice", () => (stream.errors.length > 0 ? true : undefined));
        for (let n = 4; n <= 8; n++) await post(endpoint, { n });
        await until("8 kept events", async () => ((await listed(id)).length === 8 ? true : undefined));
        proxy.refusing = false;

        await stream.count(8, 20_000);
        await post(endpoint, { n: 9 });
        await stream.count(9);
        await sleep(300);
        expect(stream.received.map((m) => m.data.event.n)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(stream.received.map((m) => m.data)).to.deep.equal(await listed(id));
        expect(stream.opens).to.be.greaterThan(1);
      } finally {
        await proxy.stop();
      }
    });
  });

  describe("heartbeat", () => {
    it("writes a comment every HEADWATER_SSE_HEARTBEAT_MS on an idle stream, invisible to EventSource", async () => {
      const { sse } = await newSource();
      const stream = open(sse, server.bootstrapKey);
      const raw = await rawStream(sse, server.bootstrapKey);
      try {
        await sleep(2_000);
        const beats = raw.lines.filter((l) => l.line === ": heartbeat").map((l) => l.at);
        // 300 ms period over 2 s: about 6; a generous band, since this is behaviour, not a benchmark.
        expect(beats.length).to.be.within(3, 8);
        const gaps = beats
          .slice(1)
          .map((t, i) => t - beats[i])
          .sort((a, b) => a - b);
        expect(gaps[Math.floor(gaps.length / 2)], "median gap").to.be.within(200, 700);
        expect(raw.lines.filter((l) => l.line.startsWith("data:"))).to.deep.equal([]);
        expect(stream.received).to.deep.equal([]);
        expect(stream.es.readyState).to.equal(EventSource.OPEN);
      } finally {
        await raw.close();
      }
    });

    it("defaults to 15 s when HEADWATER_SSE_HEARTBEAT_MS is not set", () => {
      expect(loadConfig({}).sseHeartbeatMs).to.equal(15_000);
      expect(loadConfig({ HEADWATER_SSE_HEARTBEAT_MS: "300" }).sseHeartbeatMs).to.equal(300);
      expect(() => loadConfig({ HEADWATER_SSE_HEARTBEAT_MS: "0" })).to.throw(/HEADWATER_SSE_HEARTBEAT_MS/);
    });
  });

  describe("many clients", () => {
    it("20 clients at once each get every event, in the same order", async () => {
      const { id, endpoint, sse } = await newSource();
      const clients = Array.from({ length: 20 }, () => open(sse, server.bootstrapKey));
      await Promise.all(clients.map((c) => c.opened()));
      await Promise.all(Array.from({ length: 10 }, (_, n) => post(endpoint, { n, count: 3 })));
      await Promise.all(clients.map((c) => c.count(30)));
      await sleep(300);
      const kept = await listed(id);
      expect(kept).to.have.length(30);
      for (const c of clients) expect(c.received.map((m) => m.data)).to.deep.equal(kept);
    });
  });

  describe("slow clients", () => {
    /** A raw HTTP client that sends its request and then reads nothing until told to. */
    async function pausedClient(sse: string) {
      const url = new URL(sse);
      const socket = net.connect(Number(url.port), url.hostname);
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.pause();
      socket.write(
        `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${server.bootstrapKey}\r\nAccept: text/event-stream\r\n\r\n`,
      );
      let text = "";
      let closed = false;
      const ended = new Promise<void>((resolve) => {
        socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
        socket.on("error", () => undefined);
        socket.on("close", () => ((closed = true), resolve()));
      });
      return {
        socket,
        ended,
        get text() {
          return text;
        },
        get closed() {
          return closed;
        },
        ids: () => [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]),
      };
    }

    // ~11 MB of events: more than loopback's socket buffers (~3 MB) hold for a client that does not read.
    const BIG = 12;
    const burst = async (endpoint: string) => {
      for (let n = 0; n < 2; n++) await post(endpoint, { n, count: BIG, pad: 450_000 });
    };

    it("one that never reads does not stall other clients or the endpoint, and is cut off", async () => {
      const { endpoint, sse } = await newSource();
      const slow = await pausedClient(sse);
      const fast = open(sse, server.bootstrapKey);
      await fast.opened();
      await sleep(200); // the slow client's request is registered too

      await burst(endpoint);
      await fast.count(2 * BIG, 60_000);
      const answered: number[] = [];
      for (let n = 2; n < 12; n++) {
        const started = Date.now();
        await post(endpoint, { n });
        answered.push(Date.now() - started);
      }
      await fast.count(2 * BIG + 10);
      expect(fast.received.map((m) => m.data.event.n).slice(2 * BIG)).to.deep.equal([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
      expect(Math.max(...answered), "the endpoint answers while a client is stuck").to.be.below(5_000);

      // Stalled for 4 heartbeats (1.2 s here): the server has closed it; reading now shows what it got.
      await sleep(2_000);
      slow.socket.resume();
      await Promise.race([
        slow.ended,
        sleep(20_000).then(() => {
          throw new Error("the slow client was never cut off");
        }),
      ]);
      expect(slow.text).to.match(/^HTTP\/1\.1 200 OK/);
      expect(slow.ids().length)
        .to.be.greaterThan(0)
        .and.below(2 * BIG);
      expect(fast.es.readyState).to.equal(EventSource.OPEN);
    });

    it("one that pauses, then reads, gets every event in order (caught up from the kept events)", async () => {
      // Heartbeat 3 s (stall limit 12 s) on this server, so the pause below is a slow reader, not a dead one.
      const patient = new TestServer({
        bootstrapKey: server.bootstrapKey,
        env: { HEADWATER_SSE_HEARTBEAT_MS: "3000", HEADWATER_ENDPOINT_RATE_PER_SECOND: "10000", HEADWATER_ENDPOINT_BURST: "10000" },
      });
      await patient.start();
      try {
        const r = await patient.client().post("/v1/sources", { component_code: FIXTURE, name: "patient" });
        const id = r.body.data.id as string;
        const endpoint = r.body.data.configured_props.http.endpoint_url as string;
        const paused = await pausedClient(`${patient.url}/sources/${id}/sse`);
        await sleep(200);
        await burst(endpoint);
        for (let n = 2; n < 5; n++) await post(endpoint, { n });
        // Every event is in the read models (and was published) before the client reads a byte: more than
        // its socket could hold, so the rest can only come from the kept events.
        const kept = await until(
          "every event kept",
          async () => {
            const events = (await patient.client().get(`/v1/sources/${id}/event_summaries?expand=event&limit=100`)).body.data
              .slice()
              .reverse();
            return events.length === 2 * BIG + 3 ? (events as any[]) : undefined;
          },
          30_000,
        );
        paused.socket.resume();
        await until("every event on the paused client", () => (paused.ids().length >= kept.length ? true : undefined), 30_000);
        await sleep(300);
        expect(paused.ids()).to.deep.equal(kept.map((e) => e.id));
        expect(paused.closed).to.equal(false);
        paused.socket.destroy();
      } finally {
        await patient.stop();
      }
    });
  });

  describe("end of stream", () => {
    it("ends when the source is deleted, and a reconnect gets 404", async () => {
      const { id, endpoint, sse } = await newSource();
      const stream = open(sse, server.bootstrapKey, { events: ["end"] });
      const raw = await rawStream(sse, server.bootstrapKey);
      try {
        await stream.opened();
        await post(endpoint, { n: 1 });
        await stream.count(1);
        const deleted = await admin.delete(`/v1/sources/${id}`);
        expect(deleted.status).to.be.within(200, 204);

        await until("the raw stream to end", () => raw.ended || undefined);
        const text = raw.lines.map((l) => l.line).join("\n");
        expect(text).to.include('event: end\ndata: {"reason":"source deleted"}');
        const end = await until("the end event", () => stream.received.find((m) => m.type === "end"));
        expect(end.data).to.deep.equal({ reason: "source deleted" });
        // EventSource retries after the stream ends (3 s by default) and stops for good on the 404.
        await until("the client to give up", () => stream.es.readyState === EventSource.CLOSED || undefined, 15_000);
        expect(stream.errors.at(-1)!.code).to.equal(404);
      } finally {
        await raw.close();
      }
    });

    it("ends when the key that opened it is revoked", async () => {
      const { sse } = await newSource();
      const key = (await admin.post("/v1/users/me/api_keys", { name: "short-lived" })).body.data;
      const raw = await rawStream(sse, key.api_key);
      try {
        await until("the stream to open", () => raw.lines.some((l) => l.line.startsWith(": connected")) || undefined);
        await sleep(700);
        expect(raw.ended, "still open while the key is valid").to.equal(false);
        expect((await admin.delete(`/v1/users/me/api_keys/${key.id}`)).status).to.equal(204);
        await until("the stream to end", () => raw.ended || undefined, 5_000);
        expect(raw.lines.map((l) => l.line).join("\n")).to.include('event: end\ndata: {"reason":"access revoked"}');
      } finally {
        await raw.close();
      }
    });
    it("ends at once when its key is revoked, not at the next heartbeat: nothing emitted after reaches it", async () => {
      // Heartbeat 60 s on this server: only the revocation itself can end the stream within the test.
      const slowBeat = new TestServer({ bootstrapKey: server.bootstrapKey, env: { HEADWATER_SSE_HEARTBEAT_MS: "60000" } });
      await slowBeat.start();
      try {
        const client = slowBeat.client();
        const r = await client.post("/v1/sources", { component_code: FIXTURE, name: "revoked-stream" });
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        const endpoint = r.body.data.configured_props.http.endpoint_url as string;
        const key = (await client.post("/v1/users/me/api_keys", { name: "leaked" })).body.data;
        const raw = await rawStream(`${slowBeat.url}/sources/${r.body.data.id}/sse`, key.api_key);
        try {
          await until("the stream to open", () => raw.lines.some((l) => l.line.startsWith(": connected")) || undefined);
          await post(endpoint, { n: 1 });
          await until("the event before the revocation", () => raw.lines.some((l) => l.line.includes('"n":1')) || undefined);
          expect((await client.delete(`/v1/users/me/api_keys/${key.id}`)).status).to.equal(204);
          await post(endpoint, { n: 2 });
          await until("the stream to end", () => raw.ended || undefined, 5_000);
          const text = raw.lines.map((l) => l.line).join("\n");
          expect(text).to.include('event: end\ndata: {"reason":"access revoked"}');
          expect(text, "an event emitted after the revocation").not.to.include('"n":2');
        } finally {
          await raw.close();
        }
      } finally {
        await slowBeat.stop();
      }
    });
  });

  describe("channels", () => {
    it("?event_name= streams one channel; empty means the default channel", async () => {
      const { id, endpoint, sse } = await newSource();
      const all = open(sse, server.bootstrapKey);
      const a = open(`${sse}?event_name=a`, server.bootstrapKey);
      const byDefault = open(`${sse}?event_name=`, server.bootstrapKey);
      await Promise.all([all, a, byDefault].map((s) => s.opened()));
      await post(endpoint, { n: 1, channel: "a" });
      await post(endpoint, { n: 2, channel: "b" });
      await post(endpoint, { n: 3 });
      await post(endpoint, { n: 4, channel: "a" });
      await all.count(4);
      await a.count(2);
      await byDefault.count(1);
      await sleep(300);
      expect(all.received.map((m) => m.data.event.n)).to.deep.equal([1, 2, 3, 4]);
      expect(a.received.map((m) => m.data)).to.deep.equal(await listed(id, "&event_name=a"));
      expect(a.received.map((m) => m.data.metadata.name)).to.deep.equal(["a", "a"]);
      expect(byDefault.received.map((m) => m.data.event.n)).to.deep.equal([3]);

      // Resume within a channel skips the other channels' events.
      const resumed = open(`${sse}?event_name=a`, server.bootstrapKey, { lastEventId: all.ids[0] });
      await resumed.count(1);
      await sleep(300);
      expect(resumed.received.map((m) => m.data.event.n)).to.deep.equal([4]);
    });

    it("$logs streams run logs, shaped like event_summaries?event_name=$logs, and resumes", async () => {
      const { id, endpoint, sse } = await newSource();
      const logs = open(`${sse}?event_name=$logs`, server.bootstrapKey);
      await logs.opened();
      await post(endpoint, { n: 1 });
      await post(endpoint, { n: 2 });
      await logs.count(2);
      await sleep(300);
      expect(logs.received).to.have.length(2);
      const listedLogs = (await admin.get(`/v1/sources/${id}/event_summaries?event_name=$logs`)).body.data.slice().reverse();
      expect(logs.received.map((m) => m.data)).to.deep.equal(listedLogs);
      expect(logs.received.map((m) => m.id)).to.deep.equal(listedLogs.map((l: any) => l.id));
      expect(logs.received[0].id).to.match(/^inv_/);
      expect(logs.received[0].data.event.lines.map((l: any) => l.message)).to.include("ran n=1");
      expect(logs.received[0].data.metadata).to.deep.include({ name: "$logs", emitter_id: id });

      const resumed = open(`${sse}?event_name=$logs`, server.bootstrapKey, { lastEventId: logs.ids[0] });
      await resumed.count(1);
      await sleep(300);
      expect(resumed.received.map((m) => m.data)).to.deep.equal([listedLogs[1]]);
    });
  });
});
