// The namespace view over a real (embedded) bus: names are prefixed underneath, records come back
// with the caller's names, in both consumption modes.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Bus, BusRecord } from "../../src/bus/bus.js";
import { openEmbeddedBus } from "../../src/bus/embedded/index.js";
import { namespacedBus } from "../../src/bus/namespace.js";

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("namespaced bus", () => {
  let dir: string;
  let raw: Bus;
  let bus: Bus;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "headwater-bus-ns-"));
    raw = await openEmbeddedBus({ file: path.join(dir, "bus.sqlite") });
    bus = namespacedBus(raw, "tenant-a");
    await bus.ensureTopics([{ name: "invocations", partitions: 2 }]);
  });
  afterEach(async () => {
    await raw.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("passes keyed mode through, with the caller's topic names on the records", async () => {
    const batches: BusRecord[][] = [];
    const underneath: BusRecord[][] = [];
    await bus.consume({
      groupId: "runners",
      topics: ["invocations"],
      keyed: { handler: async (records) => void batches.push([...records]) },
    });
    await raw.consume({
      groupId: "audit",
      topics: ["tenant-a.invocations"],
      keyed: { handler: async (records) => void underneath.push([...records]) },
    });
    await bus.publish("invocations", [
      { key: "dc_1", value: "one" },
      { key: "dc_1", value: "two" },
    ]);
    await until(() => batches.flat().length === 2 && underneath.flat().length === 2, "both records, both views");
    expect(batches.flat().map((r) => [r.topic, r.value.toString()])).to.deep.equal([
      ["invocations", "one"],
      ["invocations", "two"],
    ]);
    expect(underneath.flat().map((r) => r.topic)).to.deep.equal(["tenant-a.invocations", "tenant-a.invocations"]);
  });

  it("passes per-record mode through, and the inner bus still rejects both modes at once", async () => {
    const records: BusRecord[] = [];
    await bus.consume({ groupId: "dispatchers", topics: ["invocations"], handler: async (record) => void records.push(record) });
    await bus.publish("invocations", [{ key: "dc_2", value: "three" }]);
    await until(() => records.length === 1, "the record");
    expect(records[0].topic).to.equal("invocations");
    const handler = async (): Promise<void> => {};
    const error = await bus.consume({ groupId: "both", topics: ["invocations"], handler, keyed: { handler } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(TypeError);
  });
});
