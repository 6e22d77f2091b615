import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** Answers a request itself (an API a component talks to, a feed with its own headers). */
export type Route = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** A real HTTP server on loopback that records what it receives and serves fixed files. */
export class Receiver {
  readonly received: Received[] = [];
  readonly files = new Map<string, { body: string; type?: string }>();
  /** By path without the query; checked before the files. */
  readonly routes = new Map<string, Route>();
  #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => void this.#answer(req, res, chunks));
  });

  async #answer(req: http.IncomingMessage, res: http.ServerResponse, chunks: Buffer[]): Promise<void> {
    // A received request counts once it was answered: a delayed one may die with the sender.
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    const path = req.url ?? "/";
    const received: Received = { method: req.method ?? "", path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
    this.received.push(received);
    const route = this.routes.get(path.split("?")[0]);
    if (route) {
      route(req, res, received.body);
      return;
    }
    const file = this.files.get(path);
    if (file) {
      res.writeHead(200, { "content-type": file.type ?? "text/javascript" });
      res.end(file.body);
      return;
    }
    res.writeHead(this.answer ? this.answer(received, this.received.length) : this.status, { "content-type": "application/json" });
    res.end(this.reply);
  }

  status = 200;
  reply = "{}";
  /** Each answer waits this long (a slow receiver). */
  delayMs = 0;
  /** Decides each answer's status (the request and how many came so far), instead of `status`. */
  answer: ((request: Received, count: number) => number) | undefined;
  url = "";

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", () => resolve()));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Waits until `count` requests matched. */
  async waitFor(predicate: (r: Received) => boolean, count = 1, timeoutMs = 10_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const matched = this.received.filter(predicate);
      if (matched.length >= count) return matched;
      if (Date.now() > deadline) throw new Error(`receiver: ${matched.length} of ${count} expected requests after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** Polls until `check` returns a value that is not undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
