import { expect } from "chai";
import { rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { ApiClient, TestServer, tempDataDir } from "../harness/server.js";
import { openSqliteEventStore } from "../../src/store/sqlite/sqliteEventStore.js";

/** A port free now (the kernel's pick), for a server whose address must be known before it says it listens. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A log of `emitters` × `perEmitter` emitted events, as runs leave them: the read models have all of it to catch up with. */
async function writeLog(file: string, emitters: number, perEmitter: number): Promise<void> {
  const store = openSqliteEventStore({ file });
  try {
    const appendEmitter = (e: number) =>
      store.append(
        `emitter-dc_start${e}`,
        Array.from({ length: perEmitter }, (_, i) => ({
          type: "EventEmitted",
          data: {
            emitterId: `dc_start${e}`,
            id: `${1000 + i}-0`,
            channel: "",
            event: { n: i },
            summary: null,
            emitId: `${1000 + i}-0`,
            ts: null,
            indexedAtMs: 1000 + i,
            invocationId: `inv_start${e}`,
          },
        })),
      );
    for (let e = 0; e < emitters; e += 100) await Promise.all(Array.from({ length: 100 }, (_, k) => appendEmitter(e + k)));
  } finally {
    await store.close();
  }
}

describe("a starting node already answers on its port (real server)", function () {
  this.timeout(180_000);

  it("while its read models catch up: /healthz 200, /readyz 503 with the lag, the API 503 with Retry-After, event streams dropped; then it serves", async () => {
    const dataDir = tempDataDir();
    // 400,000 events: seconds of catch-up before the node can serve.
    await writeLog(path.join(dataDir, "events.db"), 4_000, 100);
    const port = await freePort();
    const server = new TestServer({ dataDir, env: { PORT: String(port) } });
    const early = new ApiClient(`http://127.0.0.1:${port}`, server.bootstrapKey);
    const started = server.start(150_000);
    let done = false;
    void started.then(
      () => (done = true),
      () => (done = true),
    );
    const seen = { health: 0, ready: 0, api: 0 };
    let lag: number | undefined;
    while (!done) {
      try {
        const [health, ready, api, stream] = await Promise.all([
          early.get("/healthz"),
          early.get("/readyz"),
          early.get("/v1/users/me"),
          early.get("/sources/dc_any/sse", { accept: "text/event-stream" }).then(
            (r) => `answered ${r.status}`,
            (error: { cause?: { code?: string } }) => error.cause?.code ?? "failed",
          ),
        ]);
        if (server.output.includes("Headwater listening") || done) break;
        expect(health.status).to.equal(200);
        expect(health.body).to.include({ status: "ok" });
        if (ready.status === 503) {
          expect(ready.body.status).to.equal("not_ready");
          expect(ready.body.checks.projections.ok).to.equal(false);
          expect(ready.body.checks.projections.error).to.match(/the node is starting/);
          if (ready.body.checks.projections.lag !== undefined) lag = ready.body.checks.projections.lag;
          seen.ready += 1;
        }
        expect(api.status).to.equal(503);
        expect(api.body).to.include({ code: "unavailable" });
        expect(Number(api.headers.get("retry-after"))).to.be.greaterThan(0);
        // An event stream is dropped unanswered (an EventSource then reconnects; a 503 would end it).
        expect(stream).to.be.oneOf(["UND_ERR_SOCKET", "ECONNRESET"]);
        seen.health += 1;
        seen.api += 1;
      } catch (error) {
        // Not listening yet: the process is still loading its modules.
        if ((error as { cause?: { code?: string } }).cause?.code !== "ECONNREFUSED") throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    try {
      await started;
      expect(seen.health, "answers while starting").to.be.greaterThan(0);
      expect(seen.ready).to.be.greaterThan(0);
      expect(lag, "the read models' lag while they caught up").to.be.greaterThan(0);
      // Then the same port serves the API.
      const ready = await server.anonymous().get("/readyz");
      expect(ready.status, JSON.stringify(ready.body)).to.equal(200);
      // This log holds no user, so the key is nobody's: the API's own answer, no longer the starting 503.
      const me = await server.client().get("/v1/users/me");
      expect(me.status).to.equal(401);
      expect(me.body).to.include({ code: "unauthorized" });
      expect(server.url).to.equal(`http://127.0.0.1:${port}`);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
