import { expect } from "chai";
import { openProjectedStore, type ProjectedStore } from "../harness/projectedStore.js";
import { SourcesReadModel } from "../../src/readModels/sources.js";
import { AccountsReadModel } from "../../src/readModels/accounts.js";
import { SubscriptionsReadModel } from "../../src/readModels/subscriptions.js";

// The memoized lookups of the hot paths, over a real SQLite log and read-model file and the real
// projector: a lookup after a change must see the change, whatever the memo held.
describe("read model memo", () => {
  let projected: ProjectedStore;
  let db: ProjectedStore["db"];
  let projector: ProjectedStore["projector"];

  beforeEach(async () => {
    projected = await openProjectedStore("hw-memo-");
    ({ db, projector } = projected);
  });

  afterEach(() => projected.close());

  const deployed = (id: string, name: string, props: Record<string, unknown>) => ({
    type: "SourceDeployed",
    data: {
      id,
      ownerId: "u_1",
      creatorId: "u_1",
      componentId: "sc_1",
      name,
      nameSlug: name,
      endpointId: `en${id}`,
      configuredProps: props,
      active: true,
      at: 1,
    },
  });

  const append = (stream: string, events: { type: string; data: unknown }[]) => projected.append(stream, events);

  it("serves a source by id and endpoint until it changes, then the changed row; a deleted source is gone", async () => {
    const sources = new SourcesReadModel(db, projector);
    await append("source-dc_1", [deployed("dc_1", "first", { limit: 1 })]);
    const first = sources.source("dc_1")!;
    expect(first.name).to.equal("first");
    expect(sources.source("dc_1")).to.equal(first, "the second lookup is the memoized row");
    expect(sources.byEndpoint("endc_1")).to.deep.equal(first);
    expect(Object.isFrozen(first.configuredProps), "callers share the row").to.equal(true);
    // Modules are strict: writing to a frozen row throws.
    expect(() => {
      first.configuredProps.limit = 2;
    }).to.throw(TypeError);

    await append("source-dc_1", [
      {
        type: "SourceUpdated",
        data: { id: "dc_1", componentId: "sc_1", name: "second", nameSlug: "second", configuredProps: { limit: 3 }, active: false, at: 2 },
      },
    ]);
    expect(sources.source("dc_1")!.name).to.equal("second");
    expect(sources.source("dc_1")!.configuredProps).to.deep.equal({ limit: 3 });
    expect(sources.byEndpoint("endc_1")!.active).to.equal(false);

    await append("source-dc_1", [{ type: "SourceDeleted", data: { id: "dc_1", ownerId: "u_1", nameSlug: "second", at: 3 } }]);
    expect(sources.source("dc_1")).to.equal(undefined);
    expect(sources.byEndpoint("endc_1")).to.equal(undefined);
  });

  it("keeps the sources of a node with more than 10,000 busy sources: the first is still memoized after 10,050 others", async function () {
    this.timeout(60_000);
    const sources = new SourcesReadModel(db, projector);
    const ids = Array.from({ length: 10_051 }, (_, i) => `dc_busy${i}`);
    await append(
      "sources-busy",
      ids.map((id, i) => deployed(id, `busy-${i}`, {})),
    );
    const first = sources.source(ids[0])!;
    const firstByEndpoint = sources.byEndpoint(`en${ids[0]}`)!;
    // Every source takes its turn, as runs of 10,051 sources do.
    for (const id of ids.slice(1)) {
      expect(sources.source(id)?.id).to.equal(id);
      expect(sources.byEndpoint(`en${id}`)?.id).to.equal(id);
    }
    expect(sources.source(ids[0]), "by id: the memoized row, not read again").to.equal(first);
    expect(sources.byEndpoint(`en${ids[0]}`), "by endpoint: the memoized row").to.equal(firstByEndpoint);
  });

  it("does not keep misses: a source deployed after a lookup found nothing is found", async () => {
    const sources = new SourcesReadModel(db, projector);
    expect(sources.byEndpoint("endc_2")).to.equal(undefined);
    await append("source-dc_2", [deployed("dc_2", "later", {})]);
    expect(sources.byEndpoint("endc_2")?.id).to.equal("dc_2");
  });

  it("keeps a user until the plan changes", async () => {
    const accounts = new AccountsReadModel(db, projector);
    await append("user-u_1", [
      { type: "UserCreated", data: { id: "u_1", username: "ann", email: "ann@example.com", plan: "free", operator: false, at: 1 } },
    ]);
    expect(accounts.user("u_1")!.plan).to.equal("free");
    await append("user-u_1", [{ type: "UserPlanChanged", data: { id: "u_1", plan: "paid", at: 2 } }]);
    expect(accounts.user("u_1")!.plan).to.equal("paid");
  });

  it("the subscriptions an event goes to: none, then the one created, then none once it is deleted", async () => {
    const subscriptions = new SubscriptionsReadModel(db, projector);
    expect(subscriptions.matching("dc_4", "u_1", "dc_*", "")).to.deep.equal([]);
    await append("subscription-sub_1", [
      {
        type: "SubscriptionCreated",
        data: { id: "sub_1", ownerId: "u_1", emitterId: "dc_4", listenerId: "wh_1", eventName: "", by: "u_1", at: 1 },
      },
    ]);
    expect(subscriptions.matching("dc_4", "u_1", "dc_*", "").map((s) => s.listenerId)).to.deep.equal(["wh_1"]);
    expect(subscriptions.matching("dc_4", "u_1", "dc_*", "other")).to.deep.equal([]);
    await append("subscription-sub_1", [{ type: "SubscriptionDeleted", data: { id: "sub_1", ownerId: "u_1", at: 2 } }]);
    expect(subscriptions.matching("dc_4", "u_1", "dc_*", "")).to.deep.equal([]);
  });

  it("the subscriptions an event goes to, per channel, by the emitter's id and by its owner's glob only", async () => {
    const subscriptions = new SubscriptionsReadModel(db, projector);
    const created = (id: string, ownerId: string, emitterId: string, listenerId: string, eventName: string) => ({
      type: "SubscriptionCreated",
      data: { id, ownerId, emitterId, listenerId, eventName, by: ownerId, at: 1 },
    });
    // Asked before any exists (the memo holds the emitter's "none"), on both channels a run uses.
    expect(subscriptions.matching("dc_5", "u_1", "dc_*", "")).to.deep.equal([]);
    expect(subscriptions.matching("dc_5", "u_1", "dc_*", "$logs")).to.deep.equal([]);
    await append("subscription-sub_2", [created("sub_2", "u_1", "dc_5", "wh_default", "")]);
    await append("subscription-sub_3", [created("sub_3", "u_1", "dc_5", "wh_logs", "$logs")]);
    await append("subscription-sub_4", [created("sub_4", "u_1", "dc_*", "wh_glob", "$logs")]);
    // Another owner's glob covers that owner's sources, not these.
    await append("subscription-sub_5", [created("sub_5", "u_2", "dc_*", "wh_other", "$logs")]);
    const listeners = (channel: string) =>
      subscriptions
        .matching("dc_5", "u_1", "dc_*", channel)
        .map((s) => s.listenerId)
        .sort();
    expect(listeners("")).to.deep.equal(["wh_default"]);
    expect(listeners("$logs")).to.deep.equal(["wh_glob", "wh_logs"]);
    expect(listeners("$errors")).to.deep.equal([]);
    expect(subscriptions.matching("dc_6", "u_2", "dc_*", "$logs").map((s) => s.listenerId)).to.deep.equal(["wh_other"]);
    expect(subscriptions.matching("dc_6", "u_2", "dc_*", "")).to.deep.equal([]);
  });

  it("events of other read models leave the memo as it was", async () => {
    const sources = new SourcesReadModel(db, projector);
    await append("source-dc_3", [deployed("dc_3", "kept", {})]);
    const row = sources.source("dc_3");
    await append("emitter-dc_3", [
      {
        type: "EventEmitted",
        data: {
          emitterId: "dc_3",
          id: "1-0",
          channel: "",
          event: {},
          summary: null,
          emitId: "1-0",
          ts: null,
          indexedAtMs: 1,
          invocationId: "inv_1",
        },
      },
    ]);
    expect(sources.source("dc_3")).to.equal(row);
  });
});
