// A real single-node Kafka (KRaft) broker for tests, without Docker: the jars come from Maven
// Central via `mvn dependency:copy-dependencies` into .cache/kafka/, the broker runs on
// 127.0.0.1 with ephemeral ports and a temporary log dir, and it never outlives its test run.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, readdirSync, rmSync, unlinkSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import kafkajs from "kafkajs";

const run = promisify(execFile);

/** Tried in order; the first that Maven Central serves is used (3.9.1 is the target). */
export const kafkaVersions = ["3.9.1", "3.9.2"] as const;

export interface KafkaBroker {
  /** host:port of the PLAINTEXT listener. */
  readonly brokers: string[];
  readonly version: string;
  /** The broker JVM's process id (a new one after restart()). */
  readonly pid: number;
  /** Its temporary config and log directory, removed by stop(). */
  readonly dir: string;
  /** The broker's own stdout/stderr (WARN and above), for diagnosing a failing test. */
  readonly logFile: string;
  stop(): Promise<void>;
  /** SIGKILLs the broker's JVM, as a crash would, and waits until it is gone; its data is kept. */
  kill(): Promise<void>;
  /** After kill(): the broker again, on the same ports with the same data; resolves once it answers. */
  restart(): Promise<void>;
}

export class KafkaHarnessError extends Error {
  override readonly name = "KafkaHarnessError";
}

export interface StartKafkaOptions {
  /** Longest wait for the broker to answer. Default 90 s. */
  readonly readyTimeoutMs?: number;
}

const repoRoot = findRepoRoot(path.dirname(fileURLToPath(import.meta.url)));
const cacheDir = path.join(repoRoot, ".cache", "kafka");
const pidDir = path.join(cacheDir, "pids");

export async function startKafka(options: StartKafkaOptions = {}): Promise<KafkaBroker> {
  reapOrphans();
  const { version, libs } = await kafkaLibs();
  let lastError: unknown;
  // A port picked free can be taken before the JVM binds it; such a start is retried on new ports.
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await launch(version, libs, options.readyTimeoutMs ?? 90_000);
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortTakenError)) break;
    }
  }
  throw lastError;
}

let shared: Promise<KafkaBroker> | undefined;

/** One broker per mocha run, shared by every test file; stopped by the root hook below or at exit. */
export function sharedKafka(): Promise<KafkaBroker> {
  shared ??= startKafka();
  return shared;
}

export async function stopSharedKafka(): Promise<void> {
  const starting = shared;
  shared = undefined;
  const broker = await starting?.catch(() => undefined);
  await broker?.stop();
}

// Mocha's `after` called at load time outside any describe is a root hook: it runs once, after
// the last test file. Outside mocha (the CLI) there is no such global.
if (typeof globalThis.after === "function") {
  after(async function () {
    this.timeout(60_000);
    await stopSharedKafka();
  });
}

class PortTakenError extends KafkaHarnessError {}

async function launch(version: string, libs: string, readyTimeoutMs: number): Promise<KafkaBroker> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "headwater-kafka-"));
  const [port, controllerPort] = await freePorts(2);
  const logFile = path.join(dir, "broker.log");
  const serverProperties = path.join(dir, "server.properties");
  const log4jProperties = path.join(dir, "log4j.properties");
  await writeFile(serverProperties, brokerConfig(port, controllerPort, path.join(dir, "data")));
  await writeFile(log4jProperties, log4jConfig);

  const jvm = [
    "-Xms64m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    // C1 only: starts faster and burns less CPU on a 2-core machine; plenty for tests.
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
    `-Dlog4j.configuration=file:${log4jProperties}`,
    "-cp",
    `${libs}/*`,
  ];
  const clusterId = kafkaClusterId();
  try {
    await run("java", [...jvm, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", serverProperties, "--ignore-formatted"], {
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw new KafkaHarnessError(`kafka storage format failed: ${describeExecError(error)}`);
  }

  // One life of the broker's JVM; kill() ends it as a crash would, restart() begins the next on the
  // same ports and data.
  let life: { javaPid: number; watchdog: ChildProcess; exited: Promise<number | null>; pidFile: string };
  const spawnJvm = async (): Promise<typeof life> => {
    // The shell watches our stdin pipe: when this process dies for any reason (even SIGKILL) the
    // pipe closes, `read` returns and the shell kills the broker.
    const watchdog = spawn(
      "sh",
      [
        "-c",
        'java "$@" >>"$HEADWATER_KAFKA_LOG" 2>&1 </dev/null & child=$!; echo "$child"; read _ignored; kill "$child" 2>/dev/null; wait "$child"',
        "sh",
        ...jvm,
        "kafka.Kafka",
        serverProperties,
      ],
      { stdio: ["pipe", "pipe", "ignore"], env: { ...process.env, HEADWATER_KAFKA_LOG: logFile } },
    );
    const exited = new Promise<number | null>((resolve) => watchdog.once("exit", (code) => resolve(code)));
    const javaPid = await firstLine(watchdog);
    const pidFile = path.join(pidDir, `${javaPid}.json`);
    await mkdir(pidDir, { recursive: true });
    await writeFile(pidFile, JSON.stringify({ javaPid, ownerPid: process.pid, dir }));
    return { javaPid, watchdog, exited, pidFile };
  };
  life = await spawnJvm();

  const killJvm = (): void => {
    try {
      process.kill(life.javaPid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  const killNow = (): void => {
    killJvm();
    try {
      rmSync(dir, { recursive: true, force: true });
      unlinkSync(life.pidFile);
    } catch {
      // the next start reaps what is left
    }
  };
  process.on("exit", killNow);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      life.watchdog.stdin?.end();
      const timer = setTimeout(killJvm, 20_000);
      await life.exited;
      clearTimeout(timer);
      process.off("exit", killNow);
      await rm(dir, { recursive: true, force: true });
      await rm(life.pidFile, { force: true });
    })());

  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilReady(address, life.exited, logFile, readyTimeoutMs);
  } catch (error) {
    const log = await readFile(logFile, "utf8").catch(() => "");
    await stop();
    if (/Address already in use|BindException/.test(log)) throw new PortTakenError(`port taken: ${log.slice(-2000)}`);
    throw error;
  }
  const kill = async (): Promise<void> => {
    killJvm();
    life.watchdog.stdin?.end();
    await life.exited;
    await rm(life.pidFile, { force: true });
  };
  const restart = async (): Promise<void> => {
    if (stopping) throw new KafkaHarnessError("the broker was stopped");
    life = await spawnJvm();
    await waitUntilReady(address, life.exited, logFile, readyTimeoutMs);
  };
  return {
    brokers: [address],
    version,
    get pid() {
      return life.javaPid;
    },
    dir,
    logFile,
    stop,
    kill,
    restart,
  };
}

function brokerConfig(port: number, controllerPort: number, dataDir: string): string {
  return [
    "process.roles=broker,controller",
    "node.id=1",
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    "controller.listener.names=CONTROLLER",
    "inter.broker.listener.name=PLAINTEXT",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    `log.dirs=${dataDir}`,
    "num.partitions=1",
    "default.replication.factor=1",
    "offsets.topic.replication.factor=1",
    "offsets.topic.num.partitions=1",
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "min.insync.replicas=1",
    "group.initial.rebalance.delay.ms=0",
    // Topics exist only through ensureTopics, as in production.
    "auto.create.topics.enable=false",
    "num.network.threads=2",
    "num.io.threads=2",
    "background.threads=2",
    "log.cleaner.enable=false",
    "",
  ].join("\n");
}

const log4jConfig = [
  "log4j.rootLogger=WARN, stderr",
  "log4j.appender.stderr=org.apache.log4j.ConsoleAppender",
  "log4j.appender.stderr.Target=System.err",
  "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout",
  "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n",
  "",
].join("\n");

async function waitUntilReady(address: string, exited: Promise<number | null>, logFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  void exited.then(() => (dead = true));
  const kafka = new kafkajs.Kafka({
    clientId: "headwater-harness",
    brokers: [address],
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: 1000,
    retry: { retries: 0 },
  });
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (dead) {
      const log = await readFile(logFile, "utf8").catch(() => "");
      throw new KafkaHarnessError(`the broker exited during start-up:\n${log.slice(-4000)}`);
    }
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      if (cluster.brokers.length > 0) {
        // Creating a topic proves the controller and the broker both work.
        await admin.createTopics({ topics: [{ topic: "headwater-harness-ready", numPartitions: 1 }], waitForLeaders: true, timeout: 5000 });
        return;
      }
    } catch (error) {
      lastError = error;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new KafkaHarnessError(`the broker at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

/**
 * Runs Maven, printing its downloads as they finish (a line per 5 MB, with a running total) so a
 * first run's ~46 MB is visibly progressing; the whole output is kept for the error message.
 */
function mavenWithProgress(args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("mvn", args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let pending = "";
    let files = 0;
    let kilobytes = 0;
    let reported = 0;
    const timer = setTimeout(() => child.kill("SIGKILL"), 10 * 60_000);
    child.stdout.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      output = (output + text).slice(-20_000);
      pending += text;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        // e.g. "Downloaded from central: https://…/kafka_2.13-3.9.1.jar (6.4 MB at 2.1 MB/s)"
        const match = /Downloaded from \S+: \S*\/([^/\s]+\.jar) \(([\d.]+) (kB|MB|B)/.exec(line);
        if (!match) continue;
        files++;
        kilobytes += Number(match[2]) * (match[3] === "MB" ? 1024 : match[3] === "B" ? 1 / 1024 : 1);
        if (kilobytes / 1024 < reported + 5) continue; // a line per 5 MB
        reported = Math.floor(kilobytes / 1024);
        process.stderr.write(`kafka harness: ${(kilobytes / 1024).toFixed(1)} MB in ${files} jars (${match[1]})\n`);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (output = (output + chunk.toString("utf8")).slice(-20_000)));
    child.once("error", (error) => (clearTimeout(timer), reject(error)));
    child.once("close", (code) => {
      clearTimeout(timer);
      if (code === 0) {
        process.stderr.write(`kafka harness: downloaded ${(kilobytes / 1024).toFixed(1)} MB in ${files} jars\n`);
        resolve();
      } else reject(Object.assign(new Error(`mvn exited with ${code}`), { stdout: output }));
    });
  });
}

/** The jars for the first version Maven resolves, cached in .cache/kafka/<version>/libs. */
async function kafkaLibs(): Promise<{ version: string; libs: string }> {
  const failures: string[] = [];
  for (const version of kafkaVersions) {
    const libs = path.join(cacheDir, version, "libs");
    if (existsSync(path.join(libs, ".complete"))) return { version, libs };
    const projectDir = path.join(cacheDir, version);
    await mkdir(projectDir, { recursive: true });
    await writeFile(path.join(projectDir, "pom.xml"), brokerPom(version));
    // Copied into a private directory first, so concurrent test runs never see half a download.
    const staging = path.join(projectDir, `libs.${process.pid}.tmp`);
    try {
      process.stderr.write(`kafka harness: downloading Kafka ${version}'s jars (~46 MB) from Maven Central into ${cacheDir} (once)…\n`);
      await mavenWithProgress([
        "-B",
        "-f",
        path.join(projectDir, "pom.xml"),
        "dependency:copy-dependencies",
        `-DoutputDirectory=${staging}`,
        "-DincludeScope=runtime",
      ]);
      await writeFile(path.join(staging, ".complete"), `${new Date().toISOString()}\n`);
      await rename(staging, libs).catch(async () => {
        if (!existsSync(path.join(libs, ".complete"))) throw new KafkaHarnessError(`could not move ${staging} to ${libs}`);
        await rm(staging, { recursive: true, force: true });
      });
      return { version, libs };
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      failures.push(`kafka_2.13:${version}: ${describeExecError(error)}`);
    }
  }
  throw new KafkaHarnessError(`no Kafka version resolved from Maven:\n${failures.join("\n")}`);
}

function brokerPom(version: string): string {
  const dependency = (group: string, artifact: string, v: string): string =>
    `    <dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId><version>${v}</version></dependency>`;
  return [
    '<project xmlns="http://maven.apache.org/POM/4.0.0">',
    "  <modelVersion>4.0.0</modelVersion>",
    "  <groupId>headwater.test</groupId>",
    "  <artifactId>kafka-broker</artifactId>",
    `  <version>${version}</version>`,
    "  <packaging>pom</packaging>",
    "  <dependencies>",
    dependency("org.apache.kafka", "kafka_2.13", version),
    dependency("org.slf4j", "slf4j-reload4j", "1.7.36"),
    dependency("ch.qos.reload4j", "reload4j", "1.2.25"),
    "  </dependencies>",
    "</project>",
    "",
  ].join("\n");
}

/** Kills brokers whose test process died without cleaning up (e.g. its stop hook never ran). */
export function reapOrphans(): void {
  if (!existsSync(pidDir)) return;
  for (const name of readdirSync(pidDir)) {
    const file = path.join(pidDir, name);
    try {
      const { javaPid, ownerPid, dir } = JSON.parse(readFileSync(file, "utf8")) as { javaPid: number; ownerPid: number; dir: string };
      if (alive(ownerPid)) continue;
      // Only a process whose command line names the broker's own temp dir is ours to kill.
      if (safeCmdline(javaPid).includes(dir)) process.kill(javaPid, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
      unlinkSync(file);
    } catch {
      rmSync(file, { force: true });
    }
  }
}

function safeCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function firstLine(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buffered += chunk;
      const newline = buffered.indexOf("\n");
      if (newline >= 0) resolve(Number(buffered.slice(0, newline)));
    });
    child.once("exit", () => reject(new KafkaHarnessError("the broker launcher exited before starting java")));
    child.once("error", reject);
  });
}

/** A KRaft cluster id: base64url of 16 random bytes, not starting with "-" (Kafka's own rule). */
function kafkaClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}

async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => {
      const server = net.createServer();
      return new Promise<net.Server>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve(server));
      });
    }),
  );
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

function describeExecError(error: unknown): string {
  const { stdout, stderr, message } = error as { stdout?: string; stderr?: string; message?: string };
  return [message, stdout?.slice(-3000), stderr?.slice(-3000)].filter(Boolean).join("\n");
}

function findRepoRoot(start: string): string {
  let dir = start;
  // tsconfig.json too: a compiled dist/ may hold a copy of package.json.
  while (!existsSync(path.join(dir, "package.json")) || !existsSync(path.join(dir, "tsconfig.json"))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new KafkaHarnessError(`no package.json above ${start}`);
    dir = parent;
  }
  return dir;
}
