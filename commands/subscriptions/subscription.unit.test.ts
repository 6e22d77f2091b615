import { expect } from "chai";
import { given } from "../testing.js";
import {
  autoSubscription,
  autoSubscriptionId,
  emitterKindOf,
  listenerKindOf,
  subscription,
  subscriptionId,
  type SubscriptionCreated,
} from "./subscription.js";

const data = {
  id: subscriptionId("u_1", "dc_a", "wh_b", ""),
  ownerId: "u_1",
  emitterId: "dc_a",
  listenerId: "wh_b",
  eventName: "",
  by: "u_1",
  at: 5,
};
const created: SubscriptionCreated = { type: "SubscriptionCreated", data };
const create = (extra: Partial<typeof data & { emitterVisible: boolean; listenerVisible: boolean }> = {}) => ({
  type: "CreateSubscription" as const,
  data: { ...data, emitterVisible: true, listenerVisible: true, ...extra },
});

describe("commands/subscriptions", () => {
  it("derives the id from owner, emitter, listener and channel", () => {
    expect(subscriptionId("u_1", "dc_a", "wh_b", ""))
      .to.equal(data.id)
      .and.match(/^sub_[0-9a-z]{16}$/);
    expect(subscriptionId("u_1", "dc_a", "wh_b", "alerts")).to.not.equal(data.id);
    expect(subscriptionId("o_1", "dc_a", "wh_b", "")).to.not.equal(data.id);
  });
  it("tells emitters, globs and listeners by their prefix", () => {
    expect([
      emitterKindOf("dc_a1"),
      emitterKindOf("dc_*"),
      emitterKindOf("p_x"),
      emitterKindOf("p_*"),
      emitterKindOf("wh_1"),
    ]).to.deep.equal(["source", "source", "workflow", "workflow", undefined]);
    expect([listenerKindOf("dc_a"), listenerKindOf("p_a"), listenerKindOf("wh_a"), listenerKindOf("dc_*")]).to.deep.equal([
      "source",
      "workflow",
      "webhook",
      undefined,
    ]);
  });
  it("creates once; the same triple again is a no-op", () => {
    given(subscription).when(create()).then([created]);
    given(subscription, created).when(create()).then([]);
  });
  it("answers 404 for emitters and listeners the caller cannot see, and refuses what is no emitter or listener", () => {
    given(subscription)
      .when(create({ emitterVisible: false }))
      .thenRejected("not_found", /emitter/);
    given(subscription)
      .when(create({ listenerVisible: false }))
      .thenRejected("not_found", /listener/);
    given(subscription)
      .when(create({ emitterId: "wh_x" }))
      .thenRejected("invalid_request", /emitter_id/);
    given(subscription)
      .when(create({ listenerId: "u_1" }))
      .thenRejected("invalid_request", /listener_id/);
    given(subscription)
      .when(create({ listenerId: "dc_a" }))
      .thenRejected("invalid_request", /itself/);
    given(subscription)
      .when(create({ eventName: "x".repeat(201) }))
      .thenRejected("invalid_request", /event_name/);
  });
  it("deletes what exists, also one an auto-subscription made (listed, without a stream)", () => {
    const deleted = { type: "SubscriptionDeleted" as const, data: { id: data.id, ownerId: "u_1", at: 6 } };
    given(subscription, created)
      .when({ type: "DeleteSubscription", data: { id: data.id, ownerId: "u_1", at: 6, listed: true, ended: false } })
      .then([deleted]);
    given(subscription)
      .when({ type: "DeleteSubscription", data: { id: data.id, ownerId: "u_1", at: 6, listed: true, ended: false } })
      .then([deleted]);
    given(subscription)
      .when({ type: "DeleteSubscription", data: { id: data.id, ownerId: "u_1", at: 6, listed: false, ended: false } })
      .thenRejected("not_found");
    given(subscription, created, deleted).when(create()).then([created]);
  });
  it("answers not found for one that ended with its emitter or listener (deleted), though its stream never said so", () => {
    given(subscription, created)
      .when({ type: "DeleteSubscription", data: { id: data.id, ownerId: "u_1", at: 6, listed: false, ended: true } })
      .thenRejected("not_found");
  });
  it("takes auto-subscriptions for $errors and $logs only", () => {
    const auto = {
      id: autoSubscriptionId("u_1", "$errors", "wh_b"),
      ownerId: "u_1",
      eventName: "$errors",
      listenerId: "wh_b",
      by: "u_1",
      at: 1,
    };
    given(autoSubscription)
      .when({ type: "CreateAutoSubscription", data: { ...auto, listenerVisible: true } })
      .then([{ type: "AutoSubscriptionCreated", data: auto }]);
    given(autoSubscription)
      .when({ type: "CreateAutoSubscription", data: { ...auto, eventName: "alerts", listenerVisible: true } })
      .thenRejected("invalid_request", /\$errors or \$logs/);
    given(autoSubscription)
      .when({ type: "CreateAutoSubscription", data: { ...auto, listenerVisible: false } })
      .thenRejected("not_found");
    given(autoSubscription, { type: "AutoSubscriptionCreated", data: auto })
      .when({ type: "CreateAutoSubscription", data: { ...auto, listenerVisible: true } })
      .then([]);
    given(autoSubscription)
      .when({ type: "DeleteAutoSubscription", data: { id: auto.id, ownerId: "u_1", at: 2 } })
      .thenRejected("not_found");
  });
});
