import { expect } from "chai";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver, type Received } from "../harness/receiver.js";
import { deploy, eventually } from "./sourcesSupport.js";

// At-least-once across a crash: the server is killed (SIGKILL) while 1,000 events are on their way
// to three webhooks; after the restart every event reaches every webhook, a copy only ever with the
// same webhook-id, and each webhook sees the events in emit order.

const BURST = `export default {
  name: "Burst", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { for (let n = 0; n < event.count; n++) this.$emit({ n }); },
};`;

describe("delivery across a crash (real server)", function () {
  this.timeout(180_000);
  const server = new TestServer({ env: { HEADWATER_ALLOW_PRIVATE_NETWORKS: "1", HEADWATER_DELIVERY_SWEEP_MS: "300" } });
  const receivers = [new Receiver(), new Receiver(), new Receiver()];
  let admin: ApiClient;

  before(async () => {
    await Promise.all([server.start(), ...receivers.map((r) => r.start())]);
    admin = server.client();
  });
  after(async () => {
    await server.stop();
    await Promise.all(receivers.map((r) => r.stop()));
  });

  it("delivers all 1,000 events to each of 3 webhooks after a SIGKILL mid-delivery, duplicates only with the same webhook-id", async () => {
    const source = await deploy(admin, BURST);
    for (const [i, receiver] of receivers.entries()) {
      // Slow receivers keep deliveries in flight when the kill comes.
      receiver.delayMs = 2 + i;
      const hook = await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/in`)}`);
      expect((await admin.post(`/v1/subscriptions?emitter_id=${source.id}&listener_id=${hook.body.data.id}`)).status).to.equal(200);
    }
    const run = await admin.post(`/v1/sources/${source.id}/run`, { event: { count: 1000 } });
    expect(run.body.data.ok, JSON.stringify(run.body)).to.equal(true);
    await eventually("deliveries under way", async () => (receivers.every((r) => r.received.length >= 50) ? true : undefined), 30_000, 5);
    await server.kill();
    const beforeRestart = receivers.map((r) => r.received.length);
    expect(
      beforeRestart.every((n) => n < 1000),
      `still in flight when killed: ${beforeRestart.join(", ")}`,
    ).to.equal(true);
    await server.start();

    const n = (r: Received) => (JSON.parse(r.body) as { event: { n: number } }).event.n;
    for (const receiver of receivers) {
      await eventually(
        "every event delivered",
        async () => (new Set(receiver.received.map(n)).size >= 1000 ? true : undefined),
        90_000,
        100,
      );
      const idOf = new Map<number, string>();
      for (const r of receiver.received) {
        const id = r.headers["webhook-id"] as string;
        expect(idOf.get(n(r)) ?? id, `event ${n(r)} came twice under different ids`).to.equal(id);
        idOf.set(n(r), id);
      }
      const firsts: number[] = [];
      for (const r of receiver.received) if (!firsts.includes(n(r))) firsts.push(n(r));
      expect(firsts, "first arrivals follow emit order").to.deep.equal([...firsts].sort((a, b) => a - b));
      expect(firsts).to.have.length(1000);
    }
  });
});
