// What a node with the api role answers while it starts (docs/decisions.md, "A starting node
// already listens"): its port is taken first, so a liveness probe sees the process alive while the
// read models catch up with a large log, a readiness probe sees why it is not ready yet, and a
// client gets 503 with Retry-After instead of a refused connection (an event stream's connection
// is dropped instead, so it reconnects). The API takes over the same listener once the node has
// started.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorBody } from "./errors.js";

/** How far the read models are, while they catch up. */
export type CatchUpProgress = () => { readonly position: number; readonly head: number } | undefined;

const RETRY_AFTER_SECONDS = 5;

export class StartingResponder {
  readonly #startedAt = Date.now();
  #step = "opening the log";
  #progress: CatchUpProgress | undefined;

  constructor(private readonly version: string) {}

  /** What the node is doing now, as /readyz and the 503s say it. */
  step(step: string, progress?: CatchUpProgress): void {
    this.#step = step;
    this.#progress = progress;
  }

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    const read = req.method === "GET" || req.method === "HEAD";
    if (read && path === "/healthz") {
      // The body of a started node's /healthz: the process is alive, whatever it is doing.
      send(res, 200, { status: "ok", version: this.version, uptime_s: Math.floor((Date.now() - this.#startedAt) / 1000) });
    } else if (read && path === "/readyz") {
      send(res, 503, this.#readiness());
    } else if (path.endsWith("/sse") || (req.headers.accept ?? "").includes("text/event-stream")) {
      // An answer other than 200 is final for an EventSource; a dropped connection makes it try
      // again, as a refused one did: live views and followers outlive a restart.
      req.socket.destroy();
    } else {
      const body: ErrorBody = { error: `the node is starting (${this.#describe()}); try again shortly`, code: "unavailable" };
      res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
      // The request's body is not read: close the connection rather than parse what follows it.
      res.setHeader("Connection", "close");
      send(res, 503, body);
    }
  };

  #describe(): string {
    const progress = this.#progress?.();
    return progress ? `${this.#step}: position ${progress.position} of ${progress.head}` : this.#step;
  }

  /** The shape of /readyz: every check not passed yet, the read models' with how far behind they are. */
  #readiness() {
    const progress = this.#progress?.();
    const error = `the node is starting (${this.#describe()})`;
    const pending = { ok: false, ms: 0, error };
    return {
      status: "not_ready",
      checks: {
        log: pending,
        bus: pending,
        projections: progress ? { ...pending, lag: Math.max(0, progress.head - progress.position) } : pending,
      },
    };
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
  res.end(res.req.method === "HEAD" ? undefined : text);
}
