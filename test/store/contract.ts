// The event store contract: every adapter runs this suite unchanged.
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import {
  IdempotencyConflictError,
  WrongExpectedRevisionError,
  type AllSubscription,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
} from "../../src/store/eventStore.js";

export interface ContractSubject {
  readonly store: EventStore;
  /** Opens a second store on the same storage, as a second server process would. */
  openAnother(): Promise<EventStore>;
  /** Closes everything the subject opened and removes its storage. */
  dispose(): Promise<void>;
}

export type ContractFactory = () => Promise<ContractSubject>;

export interface ContractOptions {
  /** Per-test timeout; remote stores need more. */
  readonly timeoutMs?: number;
  /**
   * Set to a reason when the store cannot see event ids outside the appended stream (EventStoreDB
   * has no id index): the cross-stream idempotency test is then reported pending with it.
   */
  readonly noCrossStreamIdCheck?: string;
}

const event = (type: string, data: unknown = {}, metadata?: Record<string, unknown>): NewEvent =>
  metadata === undefined ? { type, data } : { type, data, metadata };

const withId = (type: string, data: unknown = {}): NewEvent => ({ id: randomUUID(), type, data });

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

/** Collects what a subscription delivers and lets a test wait until a condition holds. */
class Delivery {
  readonly events: RecordedEvent[] = [];
  readonly batchSizes: number[] = [];
  private waiters: Array<() => void> = [];
  overlapping = false;
  private inHandler = false;

  constructor(private readonly handlerDelayMs = 0) {}

  readonly onEvents = async (batch: readonly RecordedEvent[]): Promise<void> => {
    if (this.inHandler) this.overlapping = true;
    this.inHandler = true;
    if (this.handlerDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.handlerDelayMs));
    this.events.push(...batch);
    this.batchSizes.push(batch.length);
    this.inHandler = false;
    for (const wake of this.waiters.splice(0)) wake();
  };

  /** Resolves once `predicate` holds; the mocha timeout fails the test otherwise. */
  async until(predicate: (events: readonly RecordedEvent[]) => boolean): Promise<void> {
    while (!predicate(this.events)) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

export function describeEventStoreContract(name: string, factory: ContractFactory, options: ContractOptions = {}): void {
  describe(`event store contract: ${name}`, function () {
    this.timeout(options.timeoutMs ?? 20000);
    let subject: ContractSubject;
    let store: EventStore;
    // Streams are unique per test, so the suite also runs against storage shared with other data.
    let prefix: string;
    const streamName = (label: string) => `${prefix}-${label}`;
    const mine = (events: readonly RecordedEvent[]) => events.filter((e) => e.stream.startsWith(prefix));
    const subscriptions: AllSubscription[] = [];
    const subscribe = (fromPosition: number, delivery: Delivery, batchSize?: number, on: EventStore = store) => {
      const subscription = on.subscribeToAll(
        batchSize === undefined ? { fromPosition, onEvents: delivery.onEvents } : { fromPosition, onEvents: delivery.onEvents, batchSize },
      );
      subscriptions.push(subscription);
      return subscription;
    };

    beforeEach(async function () {
      prefix = `t${randomUUID().slice(0, 8)}`;
      subject = await factory();
      store = subject.store;
    });

    afterEach(async function () {
      await Promise.all(subscriptions.splice(0).map((subscription) => subscription.stop()));
      await subject.dispose();
    });

    describe("optimistic concurrency", function () {
      it('"no_stream" succeeds only while the stream does not exist', async function () {
        const stream = streamName("order");
        const first = await store.append(stream, [event("Created")], { expectedRevision: "no_stream" });
        expect(first.nextExpectedRevision).to.equal(0);
        const error = await rejectionOf(store.append(stream, [event("Created")], { expectedRevision: "no_stream" }));
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect(error).to.include({ stream, expected: "no_stream", actual: 0 });
        expect(await store.readStream(stream)).to.have.length(1);
      });

      it('"exists" fails on a new stream and succeeds on an existing one', async function () {
        const stream = streamName("order");
        const error = await rejectionOf(store.append(stream, [event("Changed")], { expectedRevision: "exists" }));
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect((error as WrongExpectedRevisionError).actual).to.equal(undefined);
        expect(await store.streamRevision(stream)).to.equal(undefined);
        await store.append(stream, [event("Created")]);
        const result = await store.append(stream, [event("Changed"), event("Changed")], { expectedRevision: "exists" });
        expect(result.nextExpectedRevision).to.equal(2);
      });

      it("a number must equal the revision of the stream's last event", async function () {
        const stream = streamName("order");
        await store.append(stream, [event("A"), event("B")]);
        for (const stale of [0, 2, 7] as const) {
          const error = await rejectionOf(store.append(stream, [event("C")], { expectedRevision: stale }));
          expect(error).to.be.instanceOf(WrongExpectedRevisionError);
          expect(error).to.include({ stream, expected: stale, actual: 1 });
        }
        const onNew = await rejectionOf(store.append(streamName("new"), [event("C")], { expectedRevision: 0 }));
        expect(onNew).to.be.instanceOf(WrongExpectedRevisionError);
        const result = await store.append(stream, [event("C")], { expectedRevision: 1 });
        expect(result.nextExpectedRevision).to.equal(2);
        expect((await store.readStream(stream)).map((e) => e.type)).to.deep.equal(["A", "B", "C"]);
      });

      it('"any" (the default) appends whatever the stream state', async function () {
        const stream = streamName("log");
        expect((await store.append(stream, [event("A")], { expectedRevision: "any" })).nextExpectedRevision).to.equal(0);
        expect((await store.append(stream, [event("B")])).nextExpectedRevision).to.equal(1);
        expect(await store.streamRevision(stream)).to.equal(1);
      });

      it("of appends racing on one expected revision exactly one wins; a failure does not fail its neighbours", async function () {
        const stream = streamName("race");
        const other = streamName("other");
        const outcomes = await Promise.allSettled([
          store.append(other, [event("Fine")]),
          ...Array.from({ length: 8 }, (_, i) => store.append(stream, [event("Claim", { i })], { expectedRevision: "no_stream" })),
          store.append(other, [event("Fine")]),
        ]);
        const claims = outcomes.slice(1, -1);
        expect(claims.filter((o) => o.status === "fulfilled")).to.have.length(1);
        for (const failed of claims.filter((o): o is PromiseRejectedResult => o.status === "rejected")) {
          expect(failed.reason).to.be.instanceOf(WrongExpectedRevisionError);
        }
        expect(outcomes[0].status).to.equal("fulfilled");
        expect(outcomes[outcomes.length - 1].status).to.equal("fulfilled");
        expect(await store.readStream(stream)).to.have.length(1);
        expect(await store.readStream(other)).to.have.length(2);
      });
    });

    describe("idempotent appends", function () {
      it("a retried append returns the original result and appends nothing, before checking the expected revision", async function () {
        const stream = streamName("emits");
        const batch = [withId("Emitted", { n: 1 }), withId("Emitted", { n: 2 })];
        const original = await store.append(stream, batch, { expectedRevision: "no_stream" });
        await store.append(stream, [event("Later")]);
        const head = await store.headPosition();
        for (const expectedRevision of ["no_stream", "any", "exists", 0, 5] as ExpectedRevision[]) {
          expect(await store.append(stream, batch, { expectedRevision })).to.deep.equal(original);
        }
        expect(await store.headPosition()).to.equal(head);
        const ids = (await store.readStream(stream)).map((e) => e.id);
        expect(ids).to.have.length(3);
        expect(ids.slice(0, 2)).to.deep.equal([batch[0].id, batch[1].id]);
        expect(await store.streamRevision(stream)).to.equal(2);
      });

      it("a retry of a single event in the middle of a stream is recognised", async function () {
        const stream = streamName("emits");
        const middle = withId("Emitted");
        await store.append(stream, [event("A")]);
        const original = await store.append(stream, [middle]);
        await store.append(stream, [event("C")]);
        expect(await store.append(stream, [middle], { expectedRevision: 0 })).to.deep.equal(original);
        expect(await store.readStream(stream)).to.have.length(3);
      });

      it("an append whose ids only partly exist is an IdempotencyConflictError and appends nothing", async function () {
        const stream = streamName("emits");
        const known = withId("Emitted");
        await store.append(stream, [known]);
        const fresh = withId("Emitted");
        for (const batch of [
          [known, fresh],
          [fresh, known],
        ]) {
          const error = await rejectionOf(store.append(stream, batch));
          expect(error).to.be.instanceOf(IdempotencyConflictError);
          expect(error).to.include({ stream, eventId: known.id });
        }
        expect((await store.readStream(stream)).map((e) => e.id)).to.deep.equal([known.id]);
      });

      it("ids that exist in another order or not consecutively are a conflict", async function () {
        const stream = streamName("emits");
        const [a, b, c] = [withId("A"), withId("B"), withId("C")];
        await store.append(stream, [a, b, c]);
        expect(await rejectionOf(store.append(stream, [b, a]))).to.be.instanceOf(IdempotencyConflictError);
        expect(await rejectionOf(store.append(stream, [a, c]))).to.be.instanceOf(IdempotencyConflictError);
        expect(await store.append(stream, [b, c])).to.deep.include({ nextExpectedRevision: 2 });
        expect(await store.readStream(stream)).to.have.length(3);
      });

      const crossStream = "an id that exists in another stream is an IdempotencyConflictError";
      if (options.noCrossStreamIdCheck !== undefined) it(`${crossStream} — NOT RUN: ${options.noCrossStreamIdCheck}`);
      else
        it(crossStream, async function () {
          const taken = withId("Emitted");
          await store.append(streamName("first"), [taken]);
          const error = await rejectionOf(store.append(streamName("second"), [taken]));
          expect(error).to.be.instanceOf(IdempotencyConflictError);
          expect(error).to.include({ stream: streamName("second"), eventId: taken.id });
          expect(await store.streamRevision(streamName("second"))).to.equal(undefined);
        });

      it("the same id twice in one append is a conflict", async function () {
        const twice = withId("Emitted");
        expect(await rejectionOf(store.append(streamName("s"), [twice, twice]))).to.be.instanceOf(IdempotencyConflictError);
        expect(await store.readStream(streamName("s"))).to.deep.equal([]);
      });

      it("generates distinct uuids for events without an id and keeps given ones", async function () {
        const given = randomUUID();
        await store.append(streamName("s"), [event("A"), event("B"), { id: given, type: "C", data: {} }]);
        const ids = (await store.readStream(streamName("s"))).map((e) => e.id);
        for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(new Set(ids).size).to.equal(3);
        expect(ids[2]).to.equal(given);
      });

      it("generated ids are time-ordered (UUIDv7): in the order they were appended, within and across appends", async function () {
        await store.append(streamName("t"), [event("A"), event("B"), event("C")]);
        await store.append(streamName("u"), [event("D")]);
        await store.append(streamName("t"), [event("E"), event("F")]);
        // More ids in one millisecond than the random pool they come from holds (256).
        await store.append(
          streamName("u"),
          Array.from({ length: 600 }, () => event("G")),
        );
        const ids = [...(await store.readStream(streamName("t"))), ...(await store.readStream(streamName("u")))]
          .sort((a, b) => a.position - b.position)
          .map((e) => e.id);
        for (const id of ids) expect(id[14], `${id} is version 7`).to.equal("7");
        expect([...ids].sort()).to.deep.equal(ids);
        expect(new Set(ids).size).to.equal(606);
      });

      it("rejects an empty append and an id that is not a uuid", async function () {
        expect(await rejectionOf(store.append(streamName("s"), []))).to.be.instanceOf(RangeError);
        expect(await rejectionOf(store.append(streamName("s"), [{ id: "nope", type: "A", data: {} }]))).to.be.instanceOf(TypeError);
        expect(await store.streamRevision(streamName("s"))).to.equal(undefined);
      });
    });

    describe("reading a stream", function () {
      let stream: string;
      beforeEach(async function () {
        stream = streamName("read");
        await store.append(
          stream,
          [0, 1, 2, 3, 4].map((n) => event("N", { n })),
        );
        await store.append(streamName("noise"), [event("Noise")]);
        await store.append(
          stream,
          [5, 6].map((n) => event("N", { n })),
        );
      });
      const ns = (events: readonly RecordedEvent[]) => events.map((e) => (e.data as { n: number }).n);

      it("forwards from the start, from a revision, with maxCount", async function () {
        expect(ns(await store.readStream(stream))).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
        expect(ns(await store.readStream(stream, { fromRevision: 3 }))).to.deep.equal([3, 4, 5, 6]);
        expect(ns(await store.readStream(stream, { fromRevision: 2, maxCount: 3 }))).to.deep.equal([2, 3, 4]);
        expect(ns(await store.readStream(stream, { direction: "forwards", maxCount: 1 }))).to.deep.equal([0]);
        expect(await store.readStream(stream, { fromRevision: 7 })).to.deep.equal([]);
      });

      it("backwards from the end, from a revision, with maxCount", async function () {
        expect(ns(await store.readStream(stream, { direction: "backwards" }))).to.deep.equal([6, 5, 4, 3, 2, 1, 0]);
        expect(ns(await store.readStream(stream, { direction: "backwards", maxCount: 2 }))).to.deep.equal([6, 5]);
        expect(ns(await store.readStream(stream, { direction: "backwards", fromRevision: 3 }))).to.deep.equal([3, 2, 1, 0]);
        expect(ns(await store.readStream(stream, { direction: "backwards", fromRevision: 4, maxCount: 2 }))).to.deep.equal([4, 3]);
        expect(ns(await store.readStream(stream, { direction: "backwards", fromRevision: 100, maxCount: 1 }))).to.deep.equal([6]);
      });

      it("records stream, revision, position, created and the rest of each event", async function () {
        const before = Date.now();
        const result = await store.append(streamName("one"), [
          { id: randomUUID(), type: "Typed", data: { a: 1 }, metadata: { by: "test" } },
        ]);
        const [recorded] = await store.readStream(streamName("one"));
        expect(recorded).to.include({ type: "Typed", stream: streamName("one"), revision: 0, position: result.position });
        expect(recorded.data).to.deep.equal({ a: 1 });
        expect(recorded.metadata).to.deep.equal({ by: "test" });
        // Allow for clock skew between this process and a remote server.
        expect(recorded.created).to.be.within(before - 5000, Date.now() + 5000);
        expect(ns(await store.readStream(stream))).to.have.length(7);
        expect((await store.readStream(stream)).map((e) => e.revision)).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
      });

      it("a stream that never existed reads empty and has no revision", async function () {
        expect(await store.readStream(streamName("missing"))).to.deep.equal([]);
        expect(await store.readStream(streamName("missing"), { direction: "backwards" })).to.deep.equal([]);
        expect(await store.streamRevision(streamName("missing"))).to.equal(undefined);
      });
    });

    describe("reading $all", function () {
      it("returns events after an exclusive position in commit order with strictly increasing positions", async function () {
        const start = await store.headPosition();
        const results = [];
        for (let i = 0; i < 6; i++) results.push(await store.append(streamName(`s${i % 3}`), [event("E", { i }), event("E", { i })]));
        const all = mine(await store.readAll({ fromPosition: start }));
        expect(all.map((e) => (e.data as { i: number }).i)).to.deep.equal([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
        for (let i = 1; i < all.length; i++) expect(all[i].position).to.be.greaterThan(all[i - 1].position);
        expect(all[0].position).to.be.greaterThan(start).and.at.least(1);
        expect(results.map((r) => r.position)).to.deep.equal(all.filter((_, i) => i % 2 === 1).map((e) => e.position));
        expect(await store.headPosition()).to.be.at.least(results[5].position);

        const middle = all[4].position;
        const after = mine(await store.readAll({ fromPosition: middle, maxCount: 3 }));
        expect(after.map((e) => e.position)).to.deep.equal(all.slice(5, 8).map((e) => e.position));
      });

      it("headPosition is the position of the last committed event", async function () {
        const first = await store.append(streamName("s"), [event("A")]);
        const { position } = await store.append(streamName("s"), [event("B"), event("C")]);
        expect(await store.headPosition()).to.equal(position);
        const after = await store.readAll({ fromPosition: first.position });
        expect(after.map((e) => e.type)).to.deep.equal(["B", "C"]);
        expect(after[1].position).to.equal(position);
        expect(await store.readAll({ fromPosition: position })).to.deep.equal([]);
      });
    });

    describe("subscribeToAll", function () {
      it("catches up, turns live, and delivers every event once in order", async function () {
        const start = await store.headPosition();
        for (let i = 0; i < 25; i++) await store.append(streamName(`s${i % 4}`), [event("Before", { i })]);
        const delivery = new Delivery(1);
        subscribe(start, delivery, 7);
        await delivery.until((events) => mine(events).length >= 25);
        for (let i = 0; i < 30; i++) {
          await store.append(streamName(`s${i % 4}`), [event("After", { i }), event("After", { i })]);
          if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await delivery.until((events) => mine(events).length >= 85);
        const delivered = mine(delivery.events);
        const stored = mine(await store.readAll({ fromPosition: start }));
        expect(delivered.map((e) => e.position)).to.deep.equal(stored.map((e) => e.position));
        expect(delivered).to.have.length(85);
        expect(delivery.overlapping).to.equal(false);
        expect(Math.max(...delivery.batchSizes)).to.be.at.most(7);
      });

      it("gives the event loop a turn between the batches of a catch-up", async function () {
        const start = await store.headPosition();
        await store.append(
          streamName("s"),
          Array.from({ length: 500 }, (_, i) => event("Many", { i })),
        );
        const delivery = new Delivery();
        // Queued before the catch-up starts: it runs at the first turn the catch-up gives. A store
        // whose reads answer at once must not chain every batch in microtasks until the head.
        let seenWhenOthersRan: number | undefined;
        setImmediate(() => (seenWhenOthersRan = mine(delivery.events).length));
        subscribe(start, delivery, 5);
        await delivery.until((events) => mine(events).length >= 500);
        expect(seenWhenOthersRan).to.be.a("number").and.below(500);
      });

      it("starts after the given checkpoint", async function () {
        const start = await store.headPosition();
        await store.append(streamName("s"), [event("A"), event("B")]);
        const { position } = await store.append(streamName("s"), [event("C")]);
        await store.append(streamName("s"), [event("D")]);
        const delivery = new Delivery();
        subscribe(position, delivery);
        await delivery.until((events) => mine(events).length >= 1);
        await store.append(streamName("s"), [event("E")]);
        await delivery.until((events) => mine(events).length >= 2);
        expect(mine(delivery.events).map((e) => e.type)).to.deep.equal(["D", "E"]);
        expect(start).to.be.below(position);
      });

      it("delivers nothing more once stop() has resolved", async function () {
        const start = await store.headPosition();
        const delivery = new Delivery();
        const subscription = subscribe(start, delivery);
        await store.append(streamName("s"), [event("A")]);
        await delivery.until((events) => mine(events).length >= 1);
        await subscription.stop();
        await store.append(streamName("s"), [event("B")]);
        const { position } = await store.append(streamName("s"), [event("C")]);
        // A second subscriber proves the events were committed and deliverable meanwhile.
        const witness = new Delivery();
        subscribe(start, witness);
        await witness.until((events) => events.some((e) => e.position === position));
        expect(mine(delivery.events).map((e) => e.type)).to.deep.equal(["A"]);
      });

      it("stops and reports to onError when the handler rejects", async function () {
        const start = await store.headPosition();
        await store.append(streamName("s"), [event("A")]);
        const failure = new Error("projection failed");
        let calls = 0;
        const reported = new Promise<unknown>((resolve) => {
          subscriptions.push(
            store.subscribeToAll({
              fromPosition: start,
              onEvents: async () => {
                calls += 1;
                throw failure;
              },
              onError: resolve,
            }),
          );
        });
        expect(await reported).to.equal(failure);
        await store.append(streamName("s"), [event("B")]);
        await store.append(streamName("s"), [event("C")]);
        const witness = new Delivery();
        subscribe(start, witness);
        await witness.until((events) => mine(events).length >= 3);
        expect(calls).to.equal(1);
      });

      it("sees appends made through another store on the same storage", async function () {
        const other = await subject.openAnother();
        try {
          const start = await store.headPosition();
          const delivery = new Delivery();
          subscribe(start, delivery);
          await other.append(streamName("remote"), [event("A"), event("B")]);
          await delivery.until((events) => mine(events).length >= 2);
          await other.append(streamName("remote"), [event("C")]);
          await delivery.until((events) => mine(events).length >= 3);
          expect(mine(delivery.events).map((e) => e.type)).to.deep.equal(["A", "B", "C"]);
        } finally {
          await other.close();
        }
      });
    });

    describe("concurrent appenders", function () {
      it("many async tasks lose and duplicate nothing, and positions increase in commit order", async function () {
        const start = await store.headPosition();
        const delivery = new Delivery();
        subscribe(start, delivery, 50);
        const tasks = 16;
        const appendsPerTask = 12;
        const results = await Promise.all(
          Array.from({ length: tasks }, async (_, task) => {
            const positions: number[] = [];
            for (let n = 0; n < appendsPerTask; n++) {
              // Half the appends go to a stream shared by every task, half to the task's own stream.
              const shared = n % 2 === 0;
              const stream = shared ? streamName("shared") : streamName(`own${task}`);
              const expectedRevision: ExpectedRevision = shared ? "any" : n === 1 ? "no_stream" : n - 2;
              const result = await store.append(stream, [event("E", { task, n }), event("E", { task, n })], { expectedRevision });
              positions.push(result.position);
            }
            return positions;
          }),
        );
        for (const positions of results) {
          for (let i = 1; i < positions.length; i++) expect(positions[i]).to.be.greaterThan(positions[i - 1]);
        }
        const all = mine(await store.readAll({ fromPosition: start }));
        expect(all).to.have.length(tasks * appendsPerTask * 2);
        expect(new Set(all.map((e) => e.id)).size).to.equal(all.length);
        for (let i = 1; i < all.length; i++) expect(all[i].position).to.be.greaterThan(all[i - 1].position);
        const shared = await store.readStream(streamName("shared"));
        expect(shared.map((e) => e.revision)).to.deep.equal(shared.map((_, i) => i));
        // The two events of an append are adjacent in the stream and in $all.
        for (let i = 0; i < shared.length; i += 2) expect(shared[i].data).to.deep.equal(shared[i + 1].data);
        for (let task = 0; task < tasks; task++) expect(await store.streamRevision(streamName(`own${task}`))).to.equal(appendsPerTask - 1);
        await delivery.until((events) => mine(events).length >= all.length);
        expect(mine(delivery.events).map((e) => e.position)).to.deep.equal(all.map((e) => e.position));
      });

      it("two stores appending at once on the same storage: a third sees every event, in position order", async function () {
        const [first, second, reader] = [await subject.openAnother(), await subject.openAnother(), await subject.openAnother()];
        try {
          const start = await store.headPosition();
          const delivery = new Delivery();
          subscribe(start, delivery, 25, reader);
          const appendMany = (writer: EventStore, label: string) =>
            Promise.all(
              Array.from({ length: 8 }, async (_, task) => {
                for (let n = 0; n < 10; n++) await writer.append(streamName(`${label}${task % 3}`), [event("E", { label, task, n })]);
              }),
            );
          await Promise.all([appendMany(first, "a"), appendMany(second, "b"), appendMany(store, "c")]);
          await delivery.until((events) => mine(events).length >= 240);
          const delivered = mine(delivery.events);
          expect(delivered).to.have.length(240);
          for (let i = 1; i < delivered.length; i++) expect(delivered[i].position).to.be.greaterThan(delivered[i - 1].position);
          expect(delivered.map((e) => e.position)).to.deep.equal(mine(await store.readAll({ fromPosition: start })).map((e) => e.position));
        } finally {
          await Promise.all([first.close(), second.close(), reader.close()]);
        }
      });
    });

    describe("retention", function () {
      it("truncateBefore removes older events from the stream and from $all but keeps the revision", async function () {
        const start = await store.headPosition();
        const stream = streamName("emits");
        const kept = streamName("kept");
        await store.append(
          stream,
          [0, 1, 2, 3, 4].map((n) => event("N", { n })),
        );
        await store.append(kept, [event("K")]);
        await store.truncateBefore(stream, 3);
        expect((await store.readStream(stream)).map((e) => e.revision)).to.deep.equal([3, 4]);
        expect((await store.readStream(stream, { direction: "backwards" })).map((e) => e.revision)).to.deep.equal([4, 3]);
        const all = mine(await store.readAll({ fromPosition: start }));
        expect(all.map((e) => `${e.stream === kept ? "k" : "e"}${e.revision}`)).to.deep.equal(["e3", "e4", "k0"]);
        expect(await store.streamRevision(stream)).to.equal(4);
        const next = await store.append(stream, [event("N", { n: 5 })], { expectedRevision: 4 });
        expect(next.nextExpectedRevision).to.equal(5);
        const delivery = new Delivery();
        subscribe(start, delivery);
        await delivery.until((events) => mine(events).length >= 4);
        expect(mine(delivery.events).map((e) => e.revision)).to.deep.equal([3, 4, 0, 5]);
      });

      it("streamRevisions answers several streams at once, in the order asked, a missing one undefined", async function () {
        const [a, b, missing] = [streamName("a"), streamName("b"), streamName("missing")];
        await store.append(a, [event("A"), event("B"), event("C")]);
        await store.append(b, [event("A")]);
        await store.truncateBefore(a, 10);
        expect(await store.streamRevisions([b, missing, a, b])).to.deep.equal([0, undefined, 2, 0]);
        expect(await store.streamRevisions([missing])).to.deep.equal([undefined]);
        expect(await store.streamRevisions([])).to.deep.equal([]);
      });

      it("a fully truncated stream reads empty, still exists, and keeps counting", async function () {
        const stream = streamName("emits");
        const { position } = await store.append(stream, [event("A"), event("B")]);
        await store.truncateBefore(stream, 10);
        expect(await store.readStream(stream)).to.deep.equal([]);
        expect(await store.streamRevision(stream)).to.equal(1);
        expect(await store.headPosition()).to.be.at.least(position);
        expect(await rejectionOf(store.append(stream, [event("C")], { expectedRevision: "no_stream" }))).to.be.instanceOf(
          WrongExpectedRevisionError,
        );
        const next = await store.append(stream, [event("C")], { expectedRevision: 1 });
        expect(next.nextExpectedRevision).to.equal(2);
        expect(next.position).to.be.greaterThan(position);
      });

      it("a stream truncated whole, appended to and truncated whole again keeps its newest revision", async function () {
        const stream = streamName("emits");
        await store.append(stream, [event("A"), event("B")]);
        await store.truncateBefore(stream, 10);
        await store.append(stream, [event("C"), event("D")], { expectedRevision: 1 });
        expect(await store.streamRevision(stream)).to.equal(3);
        await store.truncateBefore(stream, 20);
        expect(await store.readStream(stream)).to.deep.equal([]);
        expect(await store.streamRevisions([stream])).to.deep.equal([3]);
        expect(await rejectionOf(store.append(stream, [event("E")], { expectedRevision: 1 }))).to.be.instanceOf(WrongExpectedRevisionError);
        const next = await store.append(stream, [event("E")], { expectedRevision: 3 });
        expect(next.nextExpectedRevision).to.equal(4);
        expect((await store.readStream(stream)).map((e) => e.revision)).to.deep.equal([4]);
      });
    });

    describe("JSON round trip", function () {
      it("data and metadata come back as they were appended", async function () {
        const data = {
          text: 'quotes " and \\ backslashes, newline\n, tab\t, NUL \u0000, accents é, emoji 🚰, CJK 水',
          integer: 9007199254740991,
          negative: -42,
          fraction: 0.1,
          tiny: 1e-300,
          flags: [true, false, null],
          nested: { deeper: { deepest: [1, [2, [3]]], empty: {}, none: [] } },
          "key with spaces": "v",
        };
        const metadata = { correlationId: randomUUID(), tags: ["a", "b"], nested: { n: 1 } };
        const start = await store.headPosition();
        await store.append(streamName("json"), [
          { type: "Object", data, metadata },
          { type: "Array", data: [1, "two", { three: 3 }] },
          { type: "String", data: "plain" },
          { type: "Number", data: 12.5 },
          { type: "Null", data: null },
        ]);
        const read = await store.readStream(streamName("json"));
        expect(read.map((e) => e.type)).to.deep.equal(["Object", "Array", "String", "Number", "Null"]);
        expect(read[0].data).to.deep.equal(data);
        expect(read[0].metadata).to.deep.equal(metadata);
        expect(read[1].data).to.deep.equal([1, "two", { three: 3 }]);
        expect(read[2].data).to.equal("plain");
        expect(read[3].data).to.equal(12.5);
        expect(read[4].data).to.equal(null);
        expect(read[4].metadata).to.deep.equal({});
        const fromAll = mine(await store.readAll({ fromPosition: start, maxCount: 1 }));
        expect(fromAll[0].data).to.deep.equal(data);
      });
    });
  });
}
