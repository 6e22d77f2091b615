// Delivery to webhooks: `npm run bench:delivery`.
// 1. Latency: a steady BENCH_RATE events/s (default 1000) for BENCH_SECONDS (default 10) through a
//    source endpoint, one webhook subscribed; emit → webhook latency p50/p99 measured from the
//    event's indexed_at_ms (when its run was recorded) to its arrival at the receiver.
// 2. Throughput: 100 webhooks subscribed to one source, BENCH_EVENTS events (default 200) emitted
//    at once: deliveries/s until every webhook has every event.
// 3. The same with 10 of the 100 webhooks dead (nothing listens on their port): the live ones'
//    deliveries/s, against (2) measured in the same run.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg } from "node:os";
import { TestServer, type ApiClient } from "../test/harness/server.js";

const rate = Number(process.env.BENCH_RATE ?? 1000);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const burstEvents = Number(process.env.BENCH_EVENTS ?? 200);
/** The steady load is spread over this many sources (a source's runs happen one at a time), all subscribed by one webhook. */
const latencySources = Number(process.env.BENCH_SOURCES ?? 16);

const SOURCE = `export default {
  name: "Bench delivery", version: "0.0.1",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    const b = event.body ?? {};
    if (b.count) { for (let n = 0; n < b.count; n++) this.$emit({ n }); return; }
    this.$emit({ seq: b.seq, sentAt: b.sentAt });
  },
};`;

interface Arrival {
  readonly path: string;
  readonly at: number;
  readonly body: { indexed_at_ms: number; event: { seq?: number; sentAt?: number; n?: number } };
}

/** One loopback receiver for every webhook (one path each), answering 200 at once. */
async function receiver(): Promise<{ url: string; arrivals: Arrival[]; close: () => Promise<void> }> {
  const arrivals: Arrival[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      arrivals.push({ path: req.url ?? "/", at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Arrival["body"] });
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    arrivals,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: connections are refused at once. */
async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function webhook(client: ApiClient, url: string, sourceId: string): Promise<string> {
  const created = await client.post(`/v1/webhooks?url=${encodeURIComponent(url)}`);
  const id = created.body.data.id as string;
  const subscribed = await client.post(`/v1/subscriptions?emitter_id=${sourceId}&listener_id=${id}`);
  if (subscribed.status !== 200) throw new Error(`subscribe answered ${subscribed.status}`);
  return id;
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

async function latency(client: ApiClient): Promise<void> {
  const sink = await receiver();
  const hook = (await client.post(`/v1/webhooks?url=${encodeURIComponent(`${sink.url}/latency`)}`)).body.data.id as string;
  const endpoints: URL[] = [];
  for (let i = 0; i < latencySources; i++) {
    const source = (await client.post("/v1/sources", { component_code: SOURCE })).body.data;
    await client.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook}`);
    endpoints.push(new URL(source.configured_props.http.endpoint_url as string));
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const statuses = new Map<number, number>();
  const send = (seq: number) =>
    new Promise<void>((resolve) => {
      const body = JSON.stringify({ seq, sentAt: Date.now() });
      const req = http.request(
        endpoints[seq % endpoints.length],
        { method: "POST", agent, headers: { "content-type": "application/json" } },
        (res) => {
          statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
          res.resume();
          res.on("end", () => resolve());
        },
      );
      req.on("error", () => resolve());
      req.end(body);
    });
  // Open loop: every 10 ms, rate/100 requests, whatever the answers do.
  const total = rate * seconds;
  let seq = 0;
  const inflight: Promise<void>[] = [];
  const started = Date.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((Date.now() - started) / 1000) * rate));
      while (seq < due) inflight.push(send(seq++));
      if (seq >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 10);
  });
  await Promise.all(inflight);
  const accepted = statuses.get(200) ?? 0;
  const complete = await until(() => sink.arrivals.length >= accepted, 60_000);
  const emitToHook = sink.arrivals.map((a) => a.at - a.body.indexed_at_ms).sort((a, b) => a - b);
  const requestToHook = sink.arrivals.map((a) => a.at - (a.body.event.sentAt ?? a.at)).sort((a, b) => a - b);
  const refused = [...statuses.entries()]
    .filter(([status]) => status !== 200)
    .map(([status, n]) => `${n} x ${status}`)
    .join(", ");
  console.log(
    `latency at a steady ${rate} events/s over ${latencySources} sources for ${seconds} s: ${accepted}/${total} accepted${refused ? ` (${refused})` : ""}, ${sink.arrivals.length} delivered${complete ? "" : " (incomplete)"}`,
  );
  console.log(
    `  emit -> webhook     p50 ${percentile(emitToHook, 50)} ms, p99 ${percentile(emitToHook, 99)} ms, max ${emitToHook.at(-1)} ms`,
  );
  console.log(`  request -> webhook  p50 ${percentile(requestToHook, 50)} ms, p99 ${percentile(requestToHook, 99)} ms`);
  agent.destroy();
  await sink.close();
}

async function throughput(client: ApiClient, dead: number): Promise<number> {
  const sink = await receiver();
  const source = (await client.post("/v1/sources", { component_code: SOURCE })).body.data;
  const refused = await deadPort();
  const live: string[] = [];
  for (let i = 0; i < 100; i++) {
    const path = `/hook-${i}`;
    if (i < dead) await webhook(client, `http://127.0.0.1:${refused}${path}`, source.id);
    else {
      await webhook(client, `${sink.url}${path}`, source.id);
      live.push(path);
    }
  }
  const expected = live.length * burstEvents;
  const started = Date.now();
  const r = await fetch(source.configured_props.http.endpoint_url as string, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ count: burstEvents }),
  });
  if (r.status !== 200) throw new Error(`endpoint answered ${r.status}`);
  const complete = await until(() => sink.arrivals.length >= expected, 180_000);
  const elapsed = (Date.now() - started) / 1000;
  const perSecond = Math.round(sink.arrivals.length / elapsed);
  console.log(
    `${100 - dead} live webhooks${dead ? ` + ${dead} dead (connection refused)` : ""}, ${burstEvents} events: ${sink.arrivals.length}/${expected} live deliveries in ${elapsed.toFixed(2)} s = ${perSecond} deliveries/s${complete ? "" : " (incomplete)"}`,
  );
  await sink.close();
  return perSecond;
}

async function main(): Promise<void> {
  console.log(
    `# bench:delivery on ${cpus().length} x ${cpus()[0]?.model ?? "?"}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}, node ${process.version}`,
  );
  const server = new TestServer({
    mode: "embedded",
    env: {
      HEADWATER_ALLOW_PRIVATE_NETWORKS: "1",
      HEADWATER_ENDPOINT_RATE_PER_SECOND: "100000",
      HEADWATER_ENDPOINT_BURST: "100000",
      HEADWATER_API_RATE_PER_SECOND: "100000",
      HEADWATER_API_BURST: "100000",
      HEADWATER_WEBHOOK_RETRY_MS: "1000",
      // Passed through, to compare runs one at a time (1) with batches (the default).
      ...(process.env.HEADWATER_RUN_BATCH_MAX ? { HEADWATER_RUN_BATCH_MAX: process.env.HEADWATER_RUN_BATCH_MAX } : {}),
    },
  });
  await server.start();
  try {
    const client = server.client();
    await latency(client);
    const all = await throughput(client, 0);
    const withDead = await throughput(client, 10);
    console.log(`live webhooks with 10 dead: ${((withDead / (all * 0.9)) * 100).toFixed(0)} % of their share of the all-live rate`);
  } finally {
    await server.stop();
  }
}

await main();
