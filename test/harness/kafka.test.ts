// The broker harness itself: a clean stop, and no JVM left behind when its owner dies hard.
import { expect } from "chai";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import kafkajs from "kafkajs";
import { reapOrphans, startKafka } from "./kafka.js";

const cliScript = path.join(path.dirname(fileURLToPath(import.meta.url)), "kafka-cli.js");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded) for a process to disappear; a killed JVM takes a moment to be reaped. */
async function gone(pid: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !alive(pid);
}

describe("Kafka test harness", function () {
  this.timeout(180_000);

  it("starts a broker that answers on its ephemeral port, and stop removes the JVM and its files", async () => {
    const broker = await startKafka();
    try {
      expect(broker.version).to.equal("3.9.1");
      expect(broker.brokers[0]).to.match(/^127\.0\.0\.1:\d+$/);
      const admin = new kafkajs.Kafka({ brokers: broker.brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin.connect();
      const cluster = await admin.describeCluster();
      await admin.disconnect();
      expect(cluster.brokers.map((b) => `${b.host}:${b.port}`)).to.deep.equal(broker.brokers);
      expect(alive(broker.pid)).to.equal(true);
    } finally {
      await broker.stop();
    }
    expect(alive(broker.pid), "JVM after stop").to.equal(false);
    expect(existsSync(broker.dir), "temp dir after stop").to.equal(false);
  });

  it("takes the broker down when the process that started it is killed with SIGKILL", async () => {
    const cli = spawn(process.execPath, [cliScript], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise((resolve) => cli.once("exit", resolve));
    let output = "";
    const pid = await new Promise<number>((resolve, reject) => {
      cli.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        output += chunk;
        const match = /broker pid: (\d+), log: (\S+)/.exec(output);
        if (match) resolve(Number(match[1]));
      });
      cli.once("exit", (code) => reject(new Error(`kafka-cli exited with ${code}: ${output}`)));
    });
    const dir = path.dirname(/log: (\S+)/.exec(output)![1]);
    expect(alive(pid)).to.equal(true);
    cli.kill("SIGKILL");
    await exited;
    expect(await gone(pid, 30_000), "JVM after its owner was SIGKILLed").to.equal(true);
    // Nobody ran the cleanup, so the temp dir is left for the next start to reap.
    reapOrphans();
    expect(existsSync(dir), "temp dir after reaping").to.equal(false);
  });
});
