import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import net from "node:net";
import path from "node:path";
import { cliEntry } from "../harness/server.js";

/** What one run of the real binary left: its status, its output, and stdout parsed when it is JSON. */
export interface CliResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly json: any;
}

/** A home of its own for the CLI (its profiles live in $XDG_CONFIG_HOME/headwater). */
export function cliHome(): { env: Record<string, string>; configDir: string } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "hw-cli-"));
  const config = path.join(home, "config");
  return { env: { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: config }, configDir: path.join(config, "headwater") };
}

/** Runs `node dist/src/cli/main.js …` as a child process and waits for it. */
export function runCli(args: readonly string[], env: Record<string, string>, options: { cwd?: string } = {}): CliResult {
  const result = spawnSync(process.execPath, ["--no-node-snapshot", cliEntry, ...args], {
    env,
    encoding: "utf8",
    timeout: 60_000,
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let json: unknown;
  try {
    json = JSON.parse(result.stdout);
  } catch {
    json = undefined;
  }
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr, json };
}

/** A CLI process left running (events -f): its output line by line as it comes. */
export class RunningCli {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdoutLines: string[] = [];
  stderr = "";
  readonly exited: Promise<number | null>;
  #partial = "";

  constructor(args: readonly string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, ["--no-node-snapshot", cliEntry, ...args], { env });
    this.child.stdout.on("data", (chunk: Buffer) => {
      const parts = (this.#partial + chunk.toString("utf8")).split("\n");
      this.#partial = parts.pop()!;
      this.stdoutLines.push(...parts);
    });
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")));
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
  }

  /** Waits until `probe` finds what it looks for in the output. */
  async until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}\nstdout:\n${this.stdoutLines.join("\n")}\nstderr:\n${this.stderr}`);
      }
      if (this.child.exitCode !== null) throw new Error(`the CLI exited (${this.child.exitCode}) before ${what}\nstderr:\n${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  async stop(signal: NodeJS.Signals = "SIGINT"): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/** A TCP proxy in front of the server whose connections can be cut, to make the CLI's stream reconnect. */
export class CuttableProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  refusing = false;
  port = 0;

  constructor(private readonly target: URL) {
    this.#server = net.createServer((client) => {
      if (this.refusing) return client.destroy();
      const upstream = net.connect(Number(this.target.port), this.target.hostname);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as net.AddressInfo).port;
  }

  /** Drops every connection and refuses new ones until `refusing` is false again. */
  cut(): void {
    this.refusing = true;
    for (const s of this.#sockets) s.destroy();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
