import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { sharedKafka } from "./kafka.js";
import { postgresStoreUrl } from "./postgres.js";

// Starts the real server process (dist/src/cli/main.js start) on a temporary data directory.
//
// Two modes, chosen by HEADWATER_TEST_MODE (or per server with `mode`):
// - embedded (default): the SQLite log and the embedded bus in the data directory;
// - scaled: a PostgreSQL event store (a fresh schema per server on the test database) and the
//   shared Kafka broker of this mocha run (a bus namespace per server), as a scaled-out node runs.
export type TestMode = "embedded" | "scaled";

export function testMode(): TestMode {
  const mode = process.env.HEADWATER_TEST_MODE || "embedded";
  if (mode !== "embedded" && mode !== "scaled") throw new Error(`HEADWATER_TEST_MODE must be embedded or scaled, got "${mode}"`);
  return mode;
}

/** What several scaled nodes share to form one deployment: the log and the bus namespace. */
export interface Cluster {
  readonly eventStore: string;
  readonly busNamespace: string;
}

/** A new deployment: a schema of its own and a bus namespace of its own. */
export function newCluster(): Cluster {
  return { eventStore: postgresStoreUrl(), busNamespace: `t${randomBytes(6).toString("hex")}` };
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const cliEntry = path.join(repoRoot, "dist", "src", "cli", "main.js");

export const newKey = (): string => {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let key = "hw_";
  for (let i = 0; i < 40; i++) key += alphabet[Math.floor(Math.random() * alphabet.length)];
  return key;
};

export function tempDataDir(label = "hw"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `${label}-`));
}

export interface ServerOptions {
  readonly dataDir?: string;
  readonly env?: Record<string, string>;
  readonly bootstrapKey?: string;
  /** Defaults to HEADWATER_TEST_MODE. */
  readonly mode?: TestMode;
  /** Scaled mode: join this deployment (multi-node tests); default a new one per server. */
  readonly cluster?: Cluster;
}

export class TestServer {
  #child: ChildProcess | undefined;
  #exited: Promise<number | null> | undefined;
  url = "";
  output = "";
  readonly dataDir: string;
  readonly bootstrapKey: string;
  readonly mode: TestMode;
  /** The log this server uses, as HEADWATER_EVENT_STORE names it (open it with openEventStore). */
  readonly eventStoreUrl: string;
  /** Stable across restarts of this server, unique per server. */
  readonly nodeId: string;
  readonly #cluster: Cluster | undefined;
  #bus: string | undefined;

  constructor(private readonly options: ServerOptions = {}) {
    this.dataDir = options.dataDir ?? tempDataDir();
    this.bootstrapKey = options.bootstrapKey ?? newKey();
    this.mode = options.mode ?? testMode();
    this.nodeId = `n${randomBytes(6).toString("hex")}`;
    this.#cluster = this.mode === "scaled" ? (options.cluster ?? newCluster()) : undefined;
    this.eventStoreUrl = this.#cluster?.eventStore ?? `sqlite:${path.join(this.dataDir, "events.db")}`;
  }

  get env(): Record<string, string> {
    return {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      // Where this machine keeps extra CA certificates (a proxy in front of the npm registry).
      ...(process.env.NODE_EXTRA_CA_CERTS ? { NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS } : {}),
      PORT: "0",
      HEADWATER_DATA_DIR: this.dataDir,
      HEADWATER_BOOTSTRAP_KEY: this.bootstrapKey,
      HEADWATER_NODE_ID: this.nodeId,
      ...(this.#cluster ? { HEADWATER_EVENT_STORE: this.#cluster.eventStore } : {}),
      ...(this.#bus ? { HEADWATER_BUS: this.#bus } : {}),
      ...(this.options.env ?? {}),
    };
  }

  /** The bus this server uses, as HEADWATER_BUS names it (known once it has started). */
  get busUrl(): string {
    return this.#bus ?? "embedded";
  }

  /** Scaled mode: the deployment this server belongs to. */
  get cluster(): Cluster | undefined {
    return this.#cluster;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts the process and resolves with its base URL once it prints that it listens ("" without the api role). */
  async start(timeoutMs = 30_000): Promise<string> {
    this.output = "";
    if (this.#cluster && !this.#bus) {
      const kafka = await sharedKafka();
      this.#bus = `kafka://${kafka.brokers.join(",")}?namespace=${this.#cluster.busNamespace}`;
    }
    const child = spawn(process.execPath, ["--no-node-snapshot", "--enable-source-maps", cliEntry, "start"], {
      env: this.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
    child.stderr.on("data", (chunk: Buffer) => {
      this.output += chunk.toString();
      if (process.env.HEADWATER_TEST_VERBOSE) process.stderr.write(chunk);
    });
    this.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${this.output}`)), timeoutMs);
      let listening = false;
      child.stdout.on("data", (chunk: Buffer) => {
        this.output += chunk.toString();
        if (process.env.HEADWATER_TEST_VERBOSE) process.stderr.write(chunk);
        // Only until it listens: the server keeps writing its logs here, and the output only grows.
        if (listening) return;
        // A node without the api role serves no HTTP: it says so instead, and its url stays "".
        const match = /Headwater listening on (\S+)|Headwater node running without the api role/.exec(this.output);
        if (match) {
          listening = true;
          clearTimeout(timer);
          resolve(match[1] ?? "");
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`server exited with ${code} before listening:\n${this.output}`));
      });
    });
    return this.url;
  }

  /** Graceful stop (SIGTERM), waiting for the exit. */
  async stop(): Promise<void> {
    if (!this.#child || this.#child.exitCode !== null) return;
    this.#child.kill("SIGTERM");
    await this.#exited;
  }

  /** Crash: SIGKILL, no chance to flush anything. */
  async kill(): Promise<void> {
    if (!this.#child || this.#child.exitCode !== null) return;
    this.#child.kill("SIGKILL");
    await this.#exited;
  }

  /** Runs the operator CLI against this server's data directory and parses its JSON output. */
  cli(...args: string[]): { status: number; json: any; stderr: string } {
    const result = spawnSync(process.execPath, ["--no-node-snapshot", cliEntry, ...args], { env: this.env, encoding: "utf8" });
    let json: unknown;
    try {
      json = JSON.parse(result.status === 0 ? result.stdout : result.stderr);
    } catch {
      json = undefined;
    }
    return { status: result.status ?? -1, json, stderr: result.stderr };
  }

  /** A client that sends no Authorization header. */
  anonymous(): ApiClient {
    return new ApiClient(this.url, undefined);
  }

  /** A small client bound to this server and a key. */
  client(key: string = this.bootstrapKey): ApiClient {
    return new ApiClient(this.url, key);
  }
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly key: string | undefined,
  ) {}

  async request<T = any>(
    method: string,
    pathAndQuery: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const init: RequestInit = {
      method,
      headers: {
        ...(this.key ? { authorization: `Bearer ${this.key}` } : {}),
        ...(body !== undefined && typeof body !== "string" ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    };
    const response = await fetch(this.baseUrl + pathAndQuery, init);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  }

  get = <T = any>(p: string, headers?: Record<string, string>) => this.request<T>("GET", p, undefined, headers);
  post = <T = any>(p: string, body?: unknown, headers?: Record<string, string>) => this.request<T>("POST", p, body, headers);
  put = <T = any>(p: string, body?: unknown) => this.request<T>("PUT", p, body);
  delete = <T = any>(p: string) => this.request<T>("DELETE", p);
}
