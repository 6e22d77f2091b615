// What only the embedded adapter promises: crash safety of the file, retention, offsets that
// keep counting after retention.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openEmbeddedBus } from "../../src/bus/embedded/index.js";
import { MessageLog } from "../../src/bus/embedded/messageLog.js";
import type { Bus, BusRecord } from "../../src/bus/bus.js";

const nodeScript = path.join(path.dirname(fileURLToPath(import.meta.url)), "embeddedNode.js");

/** Runs embeddedNode.js until it prints `line`, then kills it with SIGKILL. */
async function runUntilThenKill(args: string[], line: RegExp): Promise<string> {
  const child = spawn(process.execPath, ["--no-node-snapshot", nodeScript, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let output = "";
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`child never printed ${line}; got ${JSON.stringify(output)}`)), 15_000);
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output += chunk;
        if (line.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => reject(new Error(`child exited early with ${code}: ${output}`)));
    });
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
  return output;
}

/** Consumes `count` records as `groupId`, then stops gracefully (so the last commit is done). */
function collect(bus: Bus, groupId: string, topic: string, count: number): Promise<BusRecord[]> {
  const records: BusRecord[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`got only ${records.length} of ${count}`)), 10_000);
    const consumer = bus.consume({
      groupId,
      topics: [topic],
      handler: async (record) => {
        records.push(record);
        if (records.length !== count) return;
        clearTimeout(timer);
        void consumer.then((c) => c.stop()).then(() => resolve(records), reject);
      },
    });
    consumer.catch(reject);
  });
}

describe("embedded bus file", function () {
  this.timeout(30_000);
  let dir: string;
  let file: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "headwater-bus-"));
    file = path.join(dir, "bus.sqlite");
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  // Consumers read what this log just published from memory: these pin down that they read
  // exactly what the file holds, whoever published it.
  it("a reader right behind its own publishes also gets another connection's, in offset order, as the file has them", async () => {
    const file = path.join(dir, "shared.db");
    const ours = new MessageLog(file);
    const theirs = new MessageLog(file);
    try {
      ours.ensureTopics([{ name: "t", partitions: 1 }]);
      theirs.ensureTopics([{ name: "t", partitions: 1 }]);
      await ours.append("t", [
        { key: "k", value: "one", headers: { h: "1" } },
        { key: "k", value: "two" },
      ]);
      expect(ours.read("t", 0, 0, 10).map((r) => r.value.toString())).to.deep.equal(["one", "two"]);
      await theirs.append("t", [{ key: "k", value: "three" }]);
      expect(
        ours.read("t", 0, 2, 10).map((r) => r.value.toString()),
        "a caught-up reader sees the other's publish",
      ).to.deep.equal(["three"]);
      await ours.append("t", [{ key: "k", value: "four" }]);
      const read = ours.read("t", 0, 0, 10);
      expect(read.map((r) => [r.offset, r.value.toString()])).to.deep.equal([
        ["0", "one"],
        ["1", "two"],
        ["2", "three"],
        ["3", "four"],
      ]);
      expect(read).to.deep.equal(theirs.read("t", 0, 0, 10));
      expect(ours.read("t", 0, 1, 2).map((r) => r.offset)).to.deep.equal(["1", "2"]);
    } finally {
      await ours.close();
      await theirs.close();
    }
  });

  it("keeps what a process published before it was killed with SIGKILL", async () => {
    await runUntilThenKill([file, "publish", "emits", "e1", "e2", "e3"], /published\n/);
    const bus = await openEmbeddedBus({ file });
    try {
      const records = await collect(bus, "dispatcher", "emits", 3);
      expect(records.map((r) => r.value.toString())).to.deep.equal(["e1", "e2", "e3"]);
    } finally {
      await bus.close();
    }
  });

  it("redelivers the record a killed process was handling", async () => {
    const publisher = await openEmbeddedBus({ file });
    await publisher.ensureTopics([{ name: "invocations", partitions: 2 }]);
    await publisher.publish("invocations", [
      { key: "emitter-1", value: "job-1" },
      { key: "emitter-1", value: "job-2" },
    ]);
    await publisher.close();

    const output = await runUntilThenKill([file, "consume", "invocations", "runners"], /handling job-1\n/);
    expect(output).to.equal("handling job-1\n");

    const bus = await openEmbeddedBus({ file });
    try {
      const records = await collect(bus, "runners", "invocations", 2);
      expect(records.map((r) => r.value.toString())).to.deep.equal(["job-1", "job-2"]);
    } finally {
      await bus.close();
    }
  });

  it("deletes a message once every group has committed past it, and keeps counting offsets", async () => {
    const bus = await openEmbeddedBus({ file });
    const inspect = new MessageLog(file);
    try {
      await bus.ensureTopics([{ name: "emits", partitions: 1 }]);
      await bus.publish(
        "emits",
        ["e0", "e1", "e2"].map((value) => ({ key: "emitter", value })),
      );
      // The slow group registers its start before consuming anything, so retention waits for it.
      await bus.consume({ groupId: "sse", topics: ["emits"], handler: () => new Promise(() => {}) });
      await collect(bus, "webhooks", "emits", 3);
      expect(inspect.retained("emits", 0), "retained while the sse group lags").to.equal(3);
    } finally {
      await bus.close();
    }

    const reopened = await openEmbeddedBus({ file });
    try {
      await collect(reopened, "sse", "emits", 3);
      expect(inspect.retained("emits", 0), "retained once both groups are past").to.equal(0);
      await reopened.publish("emits", [{ key: "emitter", value: "e3" }]);
      const [next] = await collect(reopened, "webhooks-2", "emits", 1);
      expect(next.offset).to.equal("3");
    } finally {
      await reopened.close();
      await inspect.close();
    }
  });
});
