import { expect } from "chai";
import {
  deliveryId,
  dropQueue,
  emptyDeliveries,
  evolveDeliveries,
  foldDeliveries,
  givenUp,
  nextDelay,
  plan,
  recordTurn,
  type Delivery,
  type RetryPolicy,
} from "./delivery.js";
import { checkpoint, evolveRouter, initialRouter } from "./router.js";

const policy: RetryPolicy = { delays: [1000, 5000, 30000], disableAfterMs: 60_000 };
const delivery = (n: number): Delivery => ({
  id: deliveryId("dc_1", `10-${n}`, "", "sub_1"),
  listenerId: "wh_1",
  subscriptionId: "sub_1",
  emitterId: "dc_1",
  channel: "",
  eventId: `10-${n}`,
  payload: { n },
  chain: [],
  routedAt: 10,
});
const attempt = (d: Delivery, ok: boolean, at = 100, status: number | null = ok ? 200 : 500) => ({
  delivery: d,
  deliveryId: d.id,
  ok,
  status,
  latencyMs: 3,
  error: ok ? null : "HTTP 500",
  at,
});

describe("commands/deliveries", () => {
  it("derives one stable id per (emitter, event, channel, subscription)", () => {
    expect(deliveryId("dc_1", "10-0", "", "sub_1")).to.equal(deliveryId("dc_1", "10-0", "", "sub_1"));
    expect(deliveryId("dc_1", "10-0", "", "sub_1")).to.match(/^msg_[A-Za-z0-9_-]{27}$/);
    expect(deliveryId("dc_1", "10-0", "", "sub_2")).to.not.equal(deliveryId("dc_1", "10-0", "", "sub_1"));
  });

  it("numbers a re-send's attempts on from the delivery's earlier ones, and backs it off from its own", () => {
    const resent: Delivery = { ...delivery(0), resend: 200, priorAttempts: 3 };
    const first = recordTurn(
      emptyDeliveries,
      { listenerId: "wh_1", attempts: [attempt(resent, false, 200)], unsent: [], now: 200, random: 0.5 },
      policy,
    );
    expect(first[0]).to.deep.include({ type: "DeliveryAttempted" });
    expect(first[0].data).to.include({ attempt: 4, nextAttemptAt: 200 + nextDelay(policy, 1, 0.5) });
    const queued = foldDeliveries(first);
    expect(queued.queue[0].attempts, "its own attempts, for the back-off").to.equal(1);
    const second = recordTurn(
      queued,
      { listenerId: "wh_1", attempts: [attempt(resent, false, 1300)], unsent: [], now: 1300, random: 0.5 },
      policy,
    );
    expect(second[0].data).to.include({ attempt: 5, nextAttemptAt: 1300 + nextDelay(policy, 2, 0.5) });
    expect(second.reduce(evolveDeliveries, queued).queue[0].attempts).to.equal(2);
  });

  it("sends at once to a healthy listener, queues behind a failing one, and never sends a copy twice", () => {
    const [a, b, c] = [delivery(0), delivery(1), delivery(2)];
    expect(plan(emptyDeliveries, [a, b])).to.deep.equal({ send: [a, b], queue: [], duplicates: [] });
    const after = foldDeliveries(
      recordTurn(emptyDeliveries, { listenerId: "wh_1", attempts: [attempt(a, true)], unsent: [], now: 100, random: 0.5 }, policy),
    );
    expect(plan(after, [a, c]), "a was delivered: its copy is dropped").to.deep.equal({ send: [c], queue: [], duplicates: [a.id] });
    const failing = foldDeliveries(
      recordTurn(emptyDeliveries, { listenerId: "wh_1", attempts: [attempt(a, false)], unsent: [b], now: 100, random: 0.5 }, policy),
    );
    expect(failing.queue.map((q) => q.delivery.id)).to.deep.equal([a.id, b.id]);
    expect(plan(failing, [c]), "while a waits, c queues behind it").to.deep.equal({ send: [], queue: [c], duplicates: [] });
    expect(plan(failing, [{ ...a, resend: 1 }]).queue, "a re-send is never a duplicate").to.have.length(1);
  });

  it("retries the head on a backoff schedule with jitter, and leaves the queue in order once delivered", () => {
    const [a, b] = [delivery(0), delivery(1)];
    let state = foldDeliveries(
      recordTurn(emptyDeliveries, { listenerId: "wh_1", attempts: [attempt(a, false, 100)], unsent: [b], now: 100, random: 0.5 }, policy),
    );
    expect(state.queue[0]).to.deep.include({ attempts: 1, nextAttemptAt: 1100 });
    const queuedEvent = recordTurn(
      emptyDeliveries,
      { listenerId: "wh_1", attempts: [attempt(a, false, 100)], unsent: [b], now: 100, random: 0.5 },
      policy,
    ).at(-1)!;
    expect([queuedEvent.data.pending, queuedEvent.data.headDueAt], "events carry the queue after them").to.deep.equal([2, 1100]);
    state = recordTurn(state, { listenerId: "wh_1", attempts: [attempt(a, false, 1100)], unsent: [], now: 1100, random: 0 }, policy).reduce(
      evolveDeliveries,
      state,
    );
    expect(state.queue[0]).to.deep.include({ attempts: 2, nextAttemptAt: 1100 + 4000 });
    expect(state.consecutiveFailures).to.equal(2);
    expect(state.failingSince).to.equal(100);
    state = recordTurn(
      state,
      { listenerId: "wh_1", attempts: [attempt(a, true, 6000), attempt(b, true, 6001)], unsent: [], now: 6001, random: 0 },
      policy,
    ).reduce(evolveDeliveries, state);
    expect(state.queue).to.deep.equal([]);
    expect(state.recentDone).to.deep.equal([a.id, b.id]);
    expect([state.failingSince, state.consecutiveFailures]).to.deep.equal([null, 0]);
    expect(nextDelay(policy, 10, 0.999), "the schedule's last step repeats").to.be.within(29_000, 36_000);
  });

  it("gives a listener up after failing for disableAfterMs, dropping its queue with the reason", () => {
    const state = foldDeliveries(
      recordTurn(
        emptyDeliveries,
        { listenerId: "wh_1", attempts: [attempt(delivery(0), false, 100)], unsent: [delivery(1)], now: 100, random: 0 },
        policy,
      ),
    );
    expect(givenUp(state, 60_099, policy)).to.equal(false);
    expect(givenUp(state, 60_100, policy)).to.equal(true);
    const dropped = dropQueue(state, "wh_1", "disabled", 60_100);
    expect(dropped.map((e) => (e.type === "DeliveryDropped" ? [e.data.deliveryId, e.data.pending] : []))).to.deep.equal([
      [delivery(0).id, 1],
      [delivery(1).id, 0],
    ]);
    expect(dropped.reduce(evolveDeliveries, state).queue).to.deep.equal([]);
  });

  it("lets one node hold the router lease, hands it over once it runs out, and never moves the position back", () => {
    let state = initialRouter;
    const take = (node: string, position: number, now: number) => checkpoint(state, { node, position, now, leaseMs: 10_000 });
    state = take("a", 50, 0).reduce(evolveRouter, state);
    expect(state, "a new holder starts from the recorded position").to.deep.equal({ node: "a", position: 0, leaseUntil: 10_000 });
    state = take("a", 50, 1).reduce(evolveRouter, state);
    expect(state, "the holder records its progress and renews").to.deep.equal({ node: "a", position: 50, leaseUntil: 10_001 });
    expect(take("b", 0, 5_000), "held by a").to.deep.equal([]);
    state = take("b", 0, 10_001).reduce(evolveRouter, state);
    expect(state, "b resumes from a's position").to.deep.equal({ node: "b", position: 50, leaseUntil: 20_001 });
    expect(take("b", 40, 11_000)[0].data.position, "never back").to.equal(50);
  });
});
