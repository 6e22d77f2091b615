// Requests handed to this process's keyed consumer without the log (Bus.offerLocally), on both
// adapters: what is and is not written, who gets them, and the way back to the log when the
// consumer lets the partition go first.
import { expect } from "chai";
import Database from "better-sqlite3";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import kafkajs from "kafkajs";
import { openEmbeddedBus } from "../../src/bus/embedded/index.js";
import { openKafkaBus } from "../../src/bus/kafka/index.js";
import { namespacedBus } from "../../src/bus/namespace.js";
import { answerRequest, openReplyChannel, replyJson, type ReplyChannel } from "../../src/bus/reply.js";
import type { Bus, BusConsumer, BusRecord } from "../../src/bus/bus.js";
import { sharedKafka } from "../harness/kafka.js";

const GROUP = "workers";

/** One adapter: a new deployment per test (a file, or a Kafka topic), its clients, and what was written to the topic. */
interface Adapter {
  /** The topic requests go to (unique per test on Kafka). */
  readonly topic: string;
  open(): Promise<Bus>;
  /** Requests ever written to the topic (the partitions' ends: retention deletes what every group is past). */
  written(namespace?: string): Promise<number>;
  dispose(): Promise<void>;
}

async function embeddedAdapter(): Promise<Adapter> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "headwater-local-"));
  const file = path.join(dir, "bus.sqlite");
  const topic = "requests";
  return {
    topic,
    open: () => openEmbeddedBus({ file }),
    written: async (namespace) => {
      const db = new Database(file, { readonly: true });
      try {
        const name = namespace ? `${namespace}.${topic}` : topic;
        return (db.prepare("SELECT sum(next_offset) AS n FROM bus_partitions WHERE topic = ?").get(name) as { n: number }).n;
      } finally {
        db.close();
      }
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}

async function kafkaAdapter(): Promise<Adapter> {
  const { brokers } = await sharedKafka();
  const unique = randomUUID().slice(0, 8);
  const topic = `t-local-${unique}`;
  const admin = new kafkajs.Kafka({ brokers, clientId: `admin-${unique}`, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  let clients = 0;
  return {
    topic,
    open: () => openKafkaBus({ brokers, clientId: `c${clients++}-${unique}`, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 }),
    written: async (namespace) => {
      const ends = await admin.fetchTopicOffsets(namespace ? `${namespace}.${topic}` : topic);
      return ends.reduce((sum, end) => sum + Number(end.high), 0);
    },
    dispose: () => admin.disconnect(),
  };
}

/** What a worker answers: who it is and whether the request came over the log. */
interface Answer {
  readonly by: string;
  readonly local: boolean;
  readonly value: string;
}

for (const [name, makeAdapter] of [
  ["embedded", embeddedAdapter],
  ["Kafka", kafkaAdapter],
] as const) {
  describe(`${name} bus: requests handed over locally`, function () {
    this.timeout(120_000);
    let adapter: Adapter;
    let TOPIC: string;
    const closers: (() => Promise<void>)[] = [];

    beforeEach(async () => {
      adapter = await makeAdapter();
      TOPIC = adapter.topic;
    });
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
      await adapter.dispose();
    });

    const written = (namespace?: string) => adapter.written(namespace);

    async function node(name: string, wrap: (bus: Bus) => Bus = (bus) => bus): Promise<{ bus: Bus; replies: ReplyChannel }> {
      const bus = wrap(await adapter.open());
      await bus.ensureTopics([{ name: TOPIC, partitions: 4 }]);
      const replies = await openReplyChannel({ bus, nodeId: name, timeoutMs: 10_000 });
      closers.push(async () => {
        await replies.close();
        await bus.close();
      });
      return { bus, replies };
    }

    /** A keyed worker of GROUP on `at` that answers each request, holding the first one of `holdKey` until released. */
    async function worker(
      name: string,
      at: { bus: Bus; replies: ReplyChannel },
      holdKey?: string,
    ): Promise<{ consumer: BusConsumer; release: () => void; held: Promise<void>; seen: BusRecord[]; answers: Answer[] }> {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let heldNow!: () => void;
      const held = new Promise<void>((resolve) => (heldNow = resolve));
      let holding = holdKey !== undefined;
      const seen: BusRecord[] = [];
      /** The answers given, in the order of `seen`. */
      const answers: Answer[] = [];
      const consumer = await at.bus.consume({
        groupId: GROUP,
        topics: [TOPIC],
        keyed: {
          handler: async (records) => {
            for (const record of records) {
              seen.push(record);
              if (holding && record.key === holdKey) {
                holding = false;
                heldNow();
                await gate;
              }
              const answer: Answer = { by: name, local: record.local === true, value: record.value.toString() };
              answers.push(answer);
              await answerRequest(at.bus, at.replies, record, answer);
            }
          },
        },
      });
      return { consumer, release, held, seen, answers };
    }

    const ask = async (from: ReplyChannel, key: string, value: string, localGroup?: string): Promise<Answer> => {
      const reply = await from.request(TOPIC, { key, value }, localGroup ? { localGroup } : {});
      return replyJson(reply) as Answer;
    };

    it("goes to this client's consumer of the partition without a write; another client's request is published", async () => {
      const a = await node("a");
      const b = await node("b");
      await worker("a", a);
      // A first request over the log: the partition's reader is there once it is answered.
      expect(await ask(a.replies, "k1", "first")).to.deep.equal({ by: "a", local: false, value: "first" });
      expect(await written()).to.equal(1);
      const local = await Promise.all(["x", "y", "z"].map((v) => ask(a.replies, "k1", v, GROUP)));
      expect(local).to.deep.equal(["x", "y", "z"].map((value) => ({ by: "a", local: true, value })));
      expect(await written(), "nothing more written for the local requests").to.equal(1);
      // b has no consumer of the group: its request goes over the log to a's.
      expect(await ask(b.replies, "k1", "from b", GROUP)).to.deep.equal({ by: "a", local: false, value: "from b" });
      expect(await written()).to.equal(2);
      // A group nobody here consumes: published, and answered by nobody (the request times out).
      const offered = a.bus.offerLocally!("nobody", TOPIC, { key: "k1", value: "v" }, () => expect.fail("not taken"));
      expect(offered).to.equal(false);
    });

    it("a local request carries the publisher's object to the handler; an answer to this process is the answer's object; across processes both are bytes", async () => {
      const a = await node("a");
      const b = await node("b");
      const { seen, answers } = await worker("a", a);
      const first = { n: 1 };
      const overLog = await a.replies.request(TOPIC, { key: "k", value: JSON.stringify(first), decoded: first });
      expect(seen[0].local, "without localGroup the request went over the log").to.equal(undefined);
      expect(seen[0].decoded, "a record read off the log has no decoded value").to.equal(undefined);
      expect("decoded" in overLog && overLog.decoded, "its answer, to a waiter of this process, is the object").to.equal(answers[0]);

      const second = { n: 2 };
      const local = await a.replies.request(TOPIC, { key: "k", value: JSON.stringify(second), decoded: second }, { localGroup: GROUP });
      expect(seen[1].local).to.equal(true);
      expect(seen[1].decoded, "the handler got the publisher's own object").to.equal(second);
      expect(seen[1].value.toString(), "and its bytes, should it need them").to.equal('{"n":2}');
      expect("decoded" in local && local.decoded, "the answer's own object, never encoded").to.equal(answers[1]);

      // Another node's request reaches a's handler over the log, and a's answer goes back over it.
      const third = { n: 3 };
      const fromB = await b.replies.request(TOPIC, { key: "k", value: JSON.stringify(third), decoded: third }, { localGroup: GROUP });
      expect(seen[2].decoded).to.equal(undefined);
      expect("value" in fromB).to.equal(true);
      expect(replyJson(fromB)).to.deep.equal({ by: "a", local: false, value: '{"n":3}' });
      expect(await written(), "the local request alone was not written").to.equal(2);
    });

    it("through a namespaced view, the names are the caller's", async () => {
      const a = await node("a", (bus) => namespacedBus(bus, "ns1"));
      await worker("a", a);
      expect(await ask(a.replies, "k", "first")).to.deep.equal({ by: "a", local: false, value: "first" });
      expect(await ask(a.replies, "k", "second", GROUP)).to.deep.equal({ by: "a", local: true, value: "second" });
      expect(await written("ns1")).to.equal(1);
    });

    it("a local request still waiting when its consumer stops is published, and the partition's next owner answers it", async () => {
      const a = await node("a");
      const b = await node("b");
      const first = await worker("a", a, "k");
      const held = ask(a.replies, "k", "held");
      await first.held;
      const waiting = ask(a.replies, "k", "waiting", GROUP);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await written(), "only the held request is written").to.equal(1);
      const stopping = first.consumer.stop();
      first.release();
      await stopping;
      expect(await written(), "the waiting one went to the log at the stop").to.equal(2);
      expect(await held).to.deep.equal({ by: "a", local: false, value: "held" });
      const second = await worker("b", b);
      expect(await waiting).to.deep.equal({ by: "b", local: false, value: "waiting" });
      expect(
        first.seen.map((r) => r.value.toString()),
        "a never ran it",
      ).to.deep.equal(["held"]);
      await second.consumer.stop();
    });
  });
}
