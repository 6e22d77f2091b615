// Helpers several benches share: the machine line every result records, a keep-alive JSON
// request, a bounded-parallel loop, the server settings, the emit-the-body component and the
// plain Koa peer.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadOptions, LoadOutcome } from "./loadgen.js";

/** CPU count and model, node version, time and load average: what a recorded result ran on. */
export function machineLine(): string {
  const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown";
  return `${cpus().length} cpus (nproc), ${cpuModel}, node ${process.version}, ${new Date().toISOString()}, load average at start ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`;
}

export const benchAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP request with an optional bearer key and JSON body; the body parsed when it is JSON. */
export function request(method: string, url: string, key: string | undefined, payload?: unknown): Promise<{ status: number; body: any }> {
  const text = payload === undefined ? undefined : JSON.stringify(payload);
  return new Promise((resolve, reject) => {
    const r = http.request(
      url,
      {
        method,
        agent: benchAgent,
        headers: {
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...(text !== undefined ? { "content-type": "application/json", "content-length": Buffer.byteLength(text) } : {}),
        },
      },
      (response) => {
        let data = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (data += chunk));
        response.on("end", () => {
          let parsed: unknown = data;
          try {
            parsed = JSON.parse(data);
          } catch {
            // not JSON
          }
          resolve({ status: response.statusCode ?? 0, body: parsed });
        });
        response.on("error", reject);
      },
    );
    r.on("error", reject);
    r.end(text);
  });
}

/** Runs `work` over `items` with at most `width` at once. */
export async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index], index);
      }
    }),
  );
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Server settings every bench sets: rate limits out of the way (they would be what is measured), quiet logs. */
export const benchServerEnv: Readonly<Record<string, string>> = {
  HEADWATER_ENDPOINT_RATE_PER_SECOND: "1000000",
  HEADWATER_ENDPOINT_BURST: "1000000",
  HEADWATER_API_RATE_PER_SECOND: "1000000",
  HEADWATER_API_BURST: "1000000",
  // Every bench client is on loopback (bench:scale opens 1,000 SSE streams at once).
  HEADWATER_MAX_CONNECTIONS_PER_CLIENT: "100000",
  HEADWATER_LOG_LEVEL: "warn",
};

/**
 * An API-only node (HEADWATER_ROLES=api): the request path alone, as in a deployment whose runs
 * happen on runner nodes. Its backlog bounds are lifted: nothing there runs what it queues, so
 * the bounds would soon answer 429.
 */
export const apiOnlyNodeEnv: Readonly<Record<string, string>> = {
  HEADWATER_ROLES: "api",
  HEADWATER_SOURCE_BACKLOG: "1000000000",
  HEADWATER_OWNER_BACKLOG: "1000000000",
  HEADWATER_OWNER_BACKLOG_BYTES: "1000000000",
  HEADWATER_NODE_BACKLOG: "1000000000",
  HEADWATER_NODE_BACKLOG_BYTES: "1000000000",
};

/** A source that emits its request body; with `customResponse` it answers 200 from its run (after the event is stored). */
export const emitBodyComponent = (bench: string, customResponse: boolean): string => `
export default {
  key: "bench-${bench}-${customResponse ? "custom" : "queued"}",
  name: "Bench ${bench} ${customResponse ? "custom" : "queued"}",
  version: "0.0.1",
  props: { http: { type: "$.interface.http", customResponse: ${customResponse} } },
  async run(event) {
    this.$emit(event.body, { summary: "bench" });
    ${customResponse ? "this.http.respond({ status: 200, headers: { 'content-type': 'application/json' }, body: '{\"success\":true}' });" : ""}
  },
};`;

/** The plain Koa app (bench/plainKoa.ts, parse the body and answer) in a process of its own. */
export async function startPlainKoa(): Promise<{ url: string; child: ChildProcess }> {
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), "plainKoa.js");
  const child = spawn(process.execPath, [entry], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      const match = /listening (\d+)/.exec(chunk.toString());
      if (match) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`plain Koa exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/e/plain`, child };
}

/** POSTs a JSON payload on a keep-alive agent and resolves with the status (the body is drained). */
export function postStatus(agent: http.Agent, url: URL | string, payload: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(payload);
  });
}

/** One autocannon load in a process of its own (bench/loadgen.ts), so it never shares the bench's event loop. */
export function runLoad(options: LoadOptions): Promise<LoadOutcome> {
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), "loadgen.js");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.once("exit", (code) => {
      if (code === 0) resolve(JSON.parse(out) as LoadOutcome);
      else reject(new Error(`load generator exited with ${code}`));
    });
  });
}
