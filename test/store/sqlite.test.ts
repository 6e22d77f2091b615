import { expect } from "chai";
import Database from "better-sqlite3";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { dataLeftInLog, type EventStore, type RecordedEvent } from "../../src/store/eventStore.js";
import { openSqliteEventStore } from "../../src/store/sqlite/sqliteEventStore.js";
import { PAGE_TEXT_BUDGET, ReadAhead, type ReadAheadPage, type ReadAheadThreadData } from "../../src/store/sqlite/readAhead.js";
import { WriterThread } from "../../src/sqliteWriter/thread.js";
import { describeEventStoreContract } from "./contract.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");

function temporaryFile(): { file: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "headwater-store-"));
  return { file: join(dir, "events.db"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

describeEventStoreContract("sqlite", async () => {
  const { file, remove } = temporaryFile();
  const store = openSqliteEventStore({ file });
  return {
    store,
    openAnother: async () => openSqliteEventStore({ file }),
    dispose: async () => {
      await store.close();
      remove();
    },
  };
});

/** Runs a compiled fixture with node and yields its stdout lines. */
function runFixture(name: string, args: string[]) {
  const child = spawn(process.execPath, [join(fixtures, `${name}.js`), ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, lines, exited };
}

describe("sqlite event store", function () {
  let file: string;
  let remove: () => void;
  let store: EventStore | undefined;

  beforeEach(function () {
    ({ file, remove } = temporaryFile());
  });

  afterEach(async function () {
    await store?.close();
    store = undefined;
    remove();
  });

  it("a live subscription sees appends made by another process on the same file", async function () {
    store = openSqliteEventStore({ file });
    await store.append("server-side", [{ type: "Started", data: {} }]);
    const delivered: RecordedEvent[] = [];
    let seen!: () => void;
    const allSeen = new Promise<void>((resolve) => (seen = resolve));
    const lags: number[] = [];
    const subscription = store.subscribeToAll({
      fromPosition: 1,
      onEvents: (events) => {
        for (const event of events) lags.push(Date.now() - (event.data as { at: number }).at);
        delivered.push(...events);
        if (delivered.length === 5) seen();
      },
    });
    const { lines, exited } = runFixture("appendFromAnotherProcess", [file, "operator-cli", "5"]);
    const positions: number[] = [];
    for await (const line of lines) positions.push(Number(line));
    expect((await exited).code).to.equal(0);
    await allSeen;
    await subscription.stop();
    expect(delivered.map((e) => e.position)).to.deep.equal(positions);
    expect(delivered.every((e) => e.stream === "operator-cli")).to.equal(true);
    // Informational: the fallback path is a data_version check every 100 ms.
    console.log(`      cross-process delivery lag, ms: ${lags.join(", ")}`);
  });

  /** Collects a subscription's events from `fromPosition` until `until` says it has them all. */
  function collect(
    from: EventStore,
    fromPosition: number,
    options: { batchSize?: number; onBatch?: (events: readonly RecordedEvent[]) => Promise<void> | void } = {},
  ) {
    const delivered: RecordedEvent[] = [];
    const waiters: { count: number; resolve: () => void }[] = [];
    const subscription = from.subscribeToAll({
      fromPosition,
      batchSize: options.batchSize,
      onEvents: async (events) => {
        await options.onBatch?.(events);
        delivered.push(...events);
        for (const waiter of waiters.filter((w) => delivered.length >= w.count)) waiter.resolve();
      },
    });
    const until = (count: number, timeoutMs = 5000) =>
      new Promise<void>((resolve, reject) => {
        if (delivered.length >= count) return resolve();
        const timer = setTimeout(() => reject(new Error(`only ${delivered.length} of ${count} events delivered`)), timeoutMs);
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    return { delivered, subscription, until };
  }

  // Live tails read the store's own recent commits from memory: these pin down that they read
  // exactly what the file holds, whoever appended it and whatever was truncated since.
  it("a live tail gets own and another connection's commits in log order, each once, as the file has them", async function () {
    store = openSqliteEventStore({ file });
    const other = openSqliteEventStore({ file });
    try {
      const tail = collect(store, 0);
      await store.append("own", [{ type: "A", data: { n: 1 } }]);
      await other.append("theirs", [
        { type: "B", data: { n: 2 } },
        { type: "B", data: { n: 3 } },
      ]);
      await store.append("own", [
        { type: "A", data: { n: 4, nested: { list: [1, 2] } } },
        { type: "A", data: { n: 5 } },
      ]);
      await other.append("theirs", [{ type: "B", data: { n: 6 } }]);
      await store.append("own", [{ type: "A", data: { n: 7 } }], { expectedRevision: 2 });
      await tail.until(7);
      await tail.subscription.stop();
      expect(tail.delivered).to.deep.equal(await store.readAll());
      expect(tail.delivered.map((e) => (e.data as { n: number }).n)).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
    } finally {
      await other.close();
    }
  });

  it("another connection's commit right after an own one reaches a caught-up tail with no further own commit", async function () {
    store = openSqliteEventStore({ file });
    const other = openSqliteEventStore({ file });
    try {
      const tail = collect(store, 0);
      await store.append("own", [{ type: "A", data: {} }]);
      await tail.until(1);
      await other.append("theirs", [{ type: "B", data: {} }]);
      await tail.until(2);
      await tail.subscription.stop();
      expect(tail.delivered.map((e) => e.stream)).to.deep.equal(["own", "theirs"]);
    } finally {
      await other.close();
    }
  });

  it("a tail starting after a truncation does not get the truncated events", async function () {
    store = openSqliteEventStore({ file });
    const live = collect(store, 0);
    await store.append("kept", [{ type: "K", data: {} }]);
    await store.append(
      "trimmed",
      Array.from({ length: 5 }, (_, n) => ({ type: "T", data: { n } })),
    );
    await store.append("kept", [{ type: "K", data: {} }]);
    await live.until(7);
    await store.truncateBefore("trimmed", 3);
    const late = collect(store, 0);
    await late.until(4);
    await late.subscription.stop();
    await live.subscription.stop();
    expect(late.delivered).to.deep.equal(await store.readAll());
    expect(late.delivered.filter((e) => e.stream === "trimmed").map((e) => e.revision)).to.deep.equal([3, 4]);
  });

  /** `count` events in appends of 50, spread over streams, each event with its own payload. */
  async function appendMany(to: EventStore, count: number, tag: string): Promise<void> {
    for (let first = 0; first < count; first += 50) {
      await to.append(
        `${tag}-${first % 7}`,
        Array.from({ length: Math.min(50, count - first) }, (_, k) => ({
          type: "Many",
          data: { tag, n: first + k, text: `quote " backslash \\ é ${first + k}`, nested: { list: [first, k] } },
          metadata: { tag },
        })),
      );
    }
  }

  describe("catch-up read on another thread (read-ahead)", function () {
    it("a subscription far behind gets every event once, in order, as the file has them, appends made meanwhile included, then tails live", async function () {
      store = openSqliteEventStore({ file, readAheadFrom: 200 });
      await appendMany(store, 2_000, "before");
      let meanwhile: Promise<void> | undefined;
      const tail = collect(store, 0, {
        batchSize: 64,
        // Appends land while the thread is pages ahead: the ones after its reads must still come.
        onBatch: (events) => {
          if (events[0].position === 1) meanwhile = appendMany(store!, 300, "meanwhile");
        },
      });
      await tail.until(2_300);
      await meanwhile;
      await store.append("live", [{ type: "Live", data: { after: "caught up" } }]);
      await tail.until(2_301);
      await tail.subscription.stop();
      expect(tail.delivered).to.deep.equal(await store.readAll());
      expect(tail.delivered.at(-1)!.stream).to.equal("live");
    });

    it("events committed after the thread read the head's page still come, with no further commit to wake the subscription", async function () {
      store = openSqliteEventStore({ file, readAheadFrom: 200 });
      await appendMany(store, 250, "before");
      const tail = collect(store, 0, {
        batchSize: 100,
        // While the first page is applied, the thread has read all three (the last one short) and
        // these land after its read: the subscription must not take that short page as the head.
        onBatch: async (events) => {
          if (events[0].position !== 1) return;
          await new Promise((resolve) => setTimeout(resolve, 300));
          await appendMany(store!, 5, "after the read");
        },
      });
      await tail.until(255);
      await tail.subscription.stop();
      expect(tail.delivered).to.deep.equal(await store.readAll());
    });

    it("starts from the subscription's position, and a subscription stopped mid catch-up gets nothing more", async function () {
      store = openSqliteEventStore({ file, readAheadFrom: 200 });
      await appendMany(store, 1_000, "before");
      let stopping: Promise<void> | undefined;
      const tail = collect(store, 500, {
        batchSize: 50,
        onBatch: () => void (stopping ??= tail.subscription.stop()),
      });
      await tail.until(50);
      await stopping;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(tail.delivered.map((e) => e.position)).to.deep.equal(Array.from({ length: 50 }, (_, k) => 501 + k));
      await store.close();
      store = undefined;
    });

    it("when the thread cannot read the log, the subscription reads it on the event loop and misses nothing", async function () {
      store = openSqliteEventStore({ file, readAheadFrom: 200 });
      await appendMany(store, 1_000, "before");
      // The store's connections hold the file open; the thread opens it by name, and finds none.
      rmSync(file);
      const tail = collect(store, 0, { batchSize: 64 });
      await tail.until(1_000);
      await tail.subscription.stop();
      expect(tail.delivered).to.deep.equal(await store.readAll());
    });

    it("pages of large events end at their size budget and are joined back into whole batches", async function () {
      store = openSqliteEventStore({ file, readAheadFrom: 10 });
      // 100 events of ~200 KB: a batch of 60 (~12 MB) crosses the 8 MB page budget.
      const big = "x".repeat(200 * 1024);
      for (let i = 0; i < 100; i += 5) {
        await store.append(
          `big-${i}`,
          Array.from({ length: 5 }, (_, k) => ({ type: "Big", data: { n: i + k, big } })),
        );
      }
      // Where the budget falls: the first row that brings the page's text to it ends the page.
      let perPage = 0;
      for (let bytes = 0; bytes < PAGE_TEXT_BUDGET; perPage++) {
        bytes += JSON.stringify({ n: perPage, big }).length + "{}".length;
      }
      expect(perPage).to.be.within(33, 59);
      // The thread itself: its first page stops at the budget, the next completes the batch.
      const thread = new WriterThread<Record<string, never>>(new URL("../../src/store/sqlite/readAheadThread.js", import.meta.url), {
        file,
        fromPosition: 0,
        pageSize: 60,
        leaveDataOf: [],
      } satisfies ReadAheadThreadData);
      try {
        const pages = [];
        for (let i = 0; i < 4; i++) {
          const { after, count, cut, atHead } = (await thread.request({})) as ReadAheadPage;
          pages.push({ after, count, cut, atHead });
        }
        expect(pages).to.deep.equal([
          { after: 0, count: perPage, cut: true, atHead: false },
          { after: perPage, count: 60 - perPage, cut: false, atHead: false },
          { after: 60, count: 40, cut: false, atHead: true },
          { after: 100, count: 0, cut: false, atHead: true },
        ]);
      } finally {
        await thread.close();
      }
      const sizes: number[] = [];
      const tail = collect(store, 0, { batchSize: 60, onBatch: (events) => void sizes.push(events.length) });
      await tail.until(100);
      await tail.subscription.stop();
      expect(sizes).to.deep.equal([60, 40]);
      expect(tail.delivered).to.deep.equal(await store.readAll());
    });

    it("the thread's pages are the log's pages, and a page asked for out of turn is refused", async function () {
      store = openSqliteEventStore({ file });
      await appendMany(store, 700, "pages");
      const ahead = new ReadAhead(file, 100, 250);
      try {
        expect(await ahead.next(100)).to.deep.equal(await store.readAll({ fromPosition: 100, maxCount: 250 }));
        expect(await ahead.next(350)).to.deep.equal(await store.readAll({ fromPosition: 350, maxCount: 250 }));
        const last = await ahead.next(600);
        expect(last).to.deep.equal(await store.readAll({ fromPosition: 600 }));
        expect(last).to.have.length(100);
      } finally {
        await ahead.close();
      }
      const skipping = new ReadAhead(file, 0, 100);
      try {
        await skipping.next(0);
        let refused: unknown;
        await skipping.next(150).catch((error: unknown) => (refused = error));
        expect(String(refused)).to.match(/read-ahead page after 100, asked for one after 150/);
      } finally {
        await skipping.close();
      }
    });
  });

  it("a catch-up asked to leave some types' data in the log reads them on its thread as position and type only, and the rest whole", async function () {
    store = openSqliteEventStore({ file, readAheadFrom: 100 });
    await appendMany(store, 300, "kept");
    for (let n = 0; n < 300; n += 30) {
      await store.append(`left-${n % 4}`, [
        { type: "Left", data: { n }, metadata: { m: n } },
        { type: "Many", data: { n }, metadata: {} },
      ]);
    }
    expect(store.attachableFile).to.equal(file);
    const all = await store.readAll();
    const got: RecordedEvent[] = [];
    const subscription = store.subscribeToAll({
      fromPosition: 0,
      batchSize: 64,
      leaveDataOf: new Set(["Left"]),
      onEvents: (events) => void got.push(...events),
    });
    while (got.length < all.length) await new Promise((resolve) => setTimeout(resolve, 10));
    await subscription.stop();
    const leftOut = got.filter(dataLeftInLog);
    expect(leftOut).to.have.length(10);
    expect(got).to.deep.equal(all.map((event) => (event.type === "Left" ? { ...event, data: null, metadata: {} } : event)));
    // A subscription near the head reads on the event loop: events come whole.
    await store.append("left-0", [{ type: "Left", data: { n: 999 } }]);
    const live: RecordedEvent[] = [];
    const tail = store.subscribeToAll({
      fromPosition: all.length,
      leaveDataOf: new Set(["Left"]),
      onEvents: (events) => void live.push(...events),
    });
    while (live.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await tail.stop();
    expect(live.map((event) => event.data)).to.deep.equal([{ n: 999 }]);
    const memory = openSqliteEventStore({ file: ":memory:" });
    expect(memory.attachableFile).to.equal(undefined);
    await memory.close();
  });

  it("appends write no row of `streams`; a truncation removing a stream's last event stores its revision there", async function () {
    store = openSqliteEventStore({ file });
    await store.append(
      "a",
      [0, 1, 2].map((n) => ({ type: "N", data: { n } })),
    );
    await store.append("b", [{ type: "N", data: {} }]);
    const kept = () => {
      const raw = new Database(file, { readonly: true });
      try {
        return raw.prepare("SELECT stream, revision FROM streams ORDER BY stream").all();
      } finally {
        raw.close();
      }
    };
    expect(kept()).to.deep.equal([]);
    await store.truncateBefore("a", 2); // revision 2 is still an event
    expect(kept()).to.deep.equal([]);
    await store.truncateBefore("a", 10);
    expect(kept()).to.deep.equal([{ stream: "a", revision: 2 }]);
    expect(await store.streamRevisions(["a", "b", "c"])).to.deep.equal([2, 0, undefined]);
  });

  it("truncations asked for in one event-loop turn are written as one commit", async function () {
    store = openSqliteEventStore({ file });
    const streams = Array.from({ length: 40 }, (_, i) => `emitter-${i}`);
    for (const stream of streams)
      await store.append(
        stream,
        [0, 1, 2].map((n) => ({ type: "N", data: { n } })),
      );
    const raw = new Database(file);
    // The WAL's length in frames once everything in it is checkpointed: the next commit starts it again.
    const walFrames = () => (raw.pragma("wal_checkpoint(PASSIVE)") as { log: number }[])[0].log;
    try {
      walFrames();
      await Promise.all(streams.map((stream) => store!.truncateBefore(stream, 2)));
      // Forty streams' index entries and rows share a few pages: one commit writes each once;
      // a commit per stream would write those pages again for every one (40 and more frames).
      expect(walFrames()).to.be.below(15);
      expect(await store.streamRevisions(streams)).to.deep.equal(streams.map(() => 2));
      for (const stream of streams) expect((await store.readStream(stream)).map((e) => e.revision)).to.deep.equal([2]);
    } finally {
      raw.close();
    }
  });

  it("a file written before (a `streams` row upserted by every append) keeps its revisions", async function () {
    store = openSqliteEventStore({ file });
    await store.append("a", [
      { type: "N", data: {} },
      { type: "N", data: {} },
    ]);
    await store.close();
    store = undefined;
    const raw = new Database(file);
    // As an earlier version left it: a row per stream, and one whose events were all truncated.
    raw.prepare("INSERT INTO streams (stream, revision) VALUES ('a', 1), ('gone', 7)").run();
    raw.pragma("user_version = 1");
    raw.close();
    store = openSqliteEventStore({ file });
    expect(await store.streamRevisions(["a", "gone"])).to.deep.equal([1, 7]);
    expect((await store.append("a", [{ type: "N", data: {} }], { expectedRevision: 1 })).nextExpectedRevision).to.equal(2);
    expect((await store.append("gone", [{ type: "N", data: {} }], { expectedRevision: 7 })).nextExpectedRevision).to.equal(8);
    expect(await store.streamRevisions(["a", "gone"])).to.deep.equal([2, 8]);
  });

  it("a file of a newer format is refused, and one of format 1 is marked as the current one when opened", async function () {
    store = openSqliteEventStore({ file });
    await store.close();
    store = undefined;
    const raw = new Database(file);
    try {
      expect(raw.pragma("user_version", { simple: true })).to.equal(2);
      raw.pragma("user_version = 1");
      store = openSqliteEventStore({ file });
      expect(raw.pragma("user_version", { simple: true })).to.equal(2);
      await store.close();
      store = undefined;
      raw.pragma("user_version = 3");
      expect(() => openSqliteEventStore({ file })).to.throw(/written by a newer Headwater \(format 3; this build reads up to 2\)/);
    } finally {
      raw.close();
    }
  });

  it("storage stays bounded under a steady append + truncate load", async function () {
    this.timeout(60000);
    store = openSqliteEventStore({ file });
    const streams = Array.from({ length: 20 }, (_, i) => `emitter-${i}`);
    const keep = 100;
    const sizes: number[] = [];
    const rounds = 40;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        streams.map((stream) =>
          store!.append(
            stream,
            Array.from({ length: 20 }, (_, i) => ({ type: "Emitted", data: { round, i, body: "b".repeat(300) } })),
          ),
        ),
      );
      for (const stream of streams) {
        const revision = (await store.streamRevision(stream))!;
        await store.truncateBefore(stream, revision + 1 - keep);
      }
      sizes.push(statSync(file).size);
    }
    const retained = (await store.readAll()).length;
    expect(retained).to.equal(streams.length * keep);
    const appended = rounds * streams.length * 20;
    // 16000 events of ~400 bytes were appended (~6 MB); only 2000 are kept.
    const settled = sizes[9];
    const final = sizes[rounds - 1];
    console.log(`      db file after round 10: ${settled} B, after round ${rounds}: ${final} B (${appended} events appended)`);
    expect(final).to.be.at.most(settled * 1.25);
    expect(statSync(`${file}-wal`).size).to.be.at.most(16 * 1024 * 1024 + 1024 * 1024);
  });

  it("an append killed mid-burst is wholly present or wholly absent, and every acknowledged append survives", async function () {
    this.timeout(120000);
    const acknowledged = new Map<string, string>();
    for (let run = 0; run < 4; run++) {
      const { child, lines, exited } = runFixture("appendUntilKilled", [file, String(run)]);
      // Kill after a varying number of acks, so the kill lands at different points of a group commit.
      const killAfter = 30 + run * 47;
      let acks = 0;
      for await (const line of lines) {
        if (line === "ready") continue;
        const [runText, append, stream] = line.split(" ");
        acknowledged.set(`${runText}/${append}`, stream);
        if (++acks === killAfter) child.kill("SIGKILL");
      }
      expect((await exited).signal).to.equal("SIGKILL");
    }

    store = openSqliteEventStore({ file });
    const all = await store.readAll();
    const byAppend = new Map<string, RecordedEvent[]>();
    for (const event of all) {
      const { run, append } = event.data as { run: string; append: number };
      const key = `${run}/${append}`;
      byAppend.set(key, [...(byAppend.get(key) ?? []), event]);
    }
    for (const [key, events] of byAppend) {
      expect(
        events.map((e) => (e.data as { i: number }).i),
        key,
      ).to.deep.equal([0, 1, 2, 3]);
      const revisions = events.map((e) => e.revision);
      expect(revisions, key).to.deep.equal([revisions[0], revisions[0] + 1, revisions[0] + 2, revisions[0] + 3]);
    }
    for (const [key, stream] of acknowledged) {
      expect(byAppend.has(key), `acknowledged append ${key} is missing`).to.equal(true);
      expect(byAppend.get(key)![0].stream).to.equal(stream);
    }
    console.log(`      ${acknowledged.size} acknowledged appends, ${byAppend.size} present after 4 SIGKILLs`);
  });
});
