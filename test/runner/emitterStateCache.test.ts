import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import { openEventStore } from "../../src/store/open.js";
import type { EventStore } from "../../src/store/eventStore.js";
import { EmitterStore } from "../../commands/emitters/emitterStore.js";
import { recordRun, emptyRuntimeState, type RunRecorded } from "../../commands/emitters/emitter.js";
import { streams } from "../../commands/streams.js";
import { PER_SOURCE_MEMO_ENTRIES } from "../../src/readModels/memo.js";

// The runner keeps each busy emitter's state between batches (EmitterStore.loadCached), over a real
// SQLite log. What it must not do is forget: a node with more busy sources than the cache held read
// every source's streams back on every run.
describe("emitter state cache (real SQLite log)", () => {
  let dir: string;
  let store: EventStore;
  let streamReads = 0;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "hw-state-cache-"));
    store = await openEventStore(path.join(dir, "events.db"));
  });

  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The store, counting the stream reads a state load makes. */
  const counted = (): EventStore =>
    new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (property === "readStream") {
          return (...args: Parameters<EventStore["readStream"]>) => {
            streamReads++;
            return target.readStream(...args);
          };
        }
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });

  const recorded = (emitterId: string, db: Record<string, unknown>): RunRecorded => {
    const decision = recordRun(
      {
        emitterId,
        invocationId: `inv_${emitterId}`,
        strategy: undefined,
        emits: [],
        db,
        dbChanged: true,
        startedMs: 1,
        nowMs: 2,
      },
      emptyRuntimeState,
    );
    if (decision.kind !== "db") throw new Error(decision.kind);
    return decision.events[0];
  };

  it("still holds the first of 10,051 busy emitters after the other 10,050 were loaded", async function () {
    this.timeout(120_000);
    const ids = Array.from({ length: 10_051 }, (_, i) => `dc_cache${i}`);
    for (let i = 0; i < ids.length; i += 200) {
      await Promise.all(ids.slice(i, i + 200).map((id) => store.append(streams.emitterDb(id), [recorded(id, { n: id })])));
    }
    const emitters = new EmitterStore(counted(), { states: PER_SOURCE_MEMO_ENTRIES });
    for (const id of ids) await emitters.loadCached(id);
    const readsAfterLoading = streamReads;
    expect(readsAfterLoading, "each emitter was read once").to.be.at.least(ids.length);

    const first = await emitters.loadCached(ids[0]);
    expect(first.state.db).to.deep.equal({ n: ids[0] });
    expect(streamReads - readsAfterLoading, "stream reads for the first emitter again").to.equal(0);
  });

  it("a state whose stream moved is read again", async () => {
    const emitters = new EmitterStore(counted(), { states: PER_SOURCE_MEMO_ENTRIES });
    await store.append(streams.emitterDb("dc_moving"), [recorded("dc_moving", { v: 1 })]);
    expect((await emitters.loadCached("dc_moving")).state.db).to.deep.equal({ v: 1 });
    await store.append(streams.emitterDb("dc_moving"), [recorded("dc_moving", { v: 2 })]);
    const before = streamReads;
    expect((await emitters.loadCached("dc_moving")).state.db).to.deep.equal({ v: 2 });
    expect(streamReads).to.be.greaterThan(before);
  });
});
