// The api role's HTTP server and the bounds on what a client can hold open on it: a request must
// arrive whole within a deadline, a request answered before its body arrived does not keep its
// socket for the rest, and connections are capped per client address and per node (below the
// process's file-descriptor limit), so no client can exhaust the node's descriptors and take the
// node down for everyone (/healthz included).
import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import type stream from "node:stream";
import { log } from "../observability/log.js";

export interface HttpServerOptions {
  /** A request (headers and body) must be received whole within this; past it: 408 and the connection closed. */
  readonly requestTimeoutMs: number;
  /** Open connections one client address may hold; undefined: not applied (behind a trusted reverse proxy). */
  readonly maxConnectionsPerClient: number | undefined;
  /** Open connections the node holds in all; past it new ones are dropped at accept. */
  readonly maxConnections: number;
}

/** How long a request answered before its body arrived (401, 404, 413…) may go on sending it. */
export const UNREAD_BODY_GRACE_MS = 5_000;
/** How long a refused connection (over the per-client cap) is kept for its 503 to be read. */
const REFUSED_LINGER_MS = 1_000;
/** Descriptors kept for everything else a node opens (stores, bus, sandbox pipes, outbound requests). */
const RESERVED_DESCRIPTORS = 1_024;
const FALLBACK_MAX_CONNECTIONS = 10_000;

/**
 * The default node-wide cap: the process's open-files limit (Node raises the soft limit to the
 * hard one at start) less a reserve for everything else: a quarter of the limit, at most 1,024.
 */
export function defaultMaxConnections(limitsFile = "/proc/self/limits"): number {
  let limit: number | undefined;
  try {
    const line = /^Max open files\s+(\d+|unlimited)\s+/m.exec(fs.readFileSync(limitsFile, "utf8"));
    if (line) limit = line[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(line[1]);
  } catch {
    // not Linux: fall back below
  }
  if (limit === undefined) return FALLBACK_MAX_CONNECTIONS;
  if (!Number.isFinite(limit)) return 1_000_000;
  return Math.max(64, limit - Math.min(RESERVED_DESCRIPTORS, Math.floor(limit / 4)));
}

/** The response being written on a socket, if any. */
const RESPONDING = Symbol("responding");
type Tracked = stream.Duplex & { [RESPONDING]?: http.ServerResponse | undefined };

/** A client's address as one key: IPv4-mapped IPv6 (`::ffff:1.2.3.4`) is the IPv4 address. */
function addressOf(socket: net.Socket): string | undefined {
  const address = socket.remoteAddress;
  return address?.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

function tooManyConnections(perClient: number): string {
  const body = JSON.stringify({
    error: `too many open connections from this address (at most ${perClient}); close some or try again later`,
    code: "overloaded",
  });
  return (
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Ends a socket after `response` (if any), and destroys it if the peer has not closed within `lingerMs`. */
function closeSoon(socket: stream.Duplex, response: string | undefined, lingerMs: number): void {
  socket.on("error", () => {});
  // Take and drop what the client still sends, so the close is a FIN the client reads the answer before, not a reset.
  socket.resume();
  socket.end(response);
  const timer = setTimeout(() => socket.destroy(), lingerMs);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
}

/** Warnings about refused connections: at most one a minute, with the counts since the last. */
class RefusalLog {
  #refused = 0;
  #dropped = 0;
  #timer: NodeJS.Timeout | undefined;

  refused(): void {
    this.#refused++;
    this.#schedule();
  }

  dropped(): void {
    this.#dropped++;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer) return;
    this.#flush();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#refused + this.#dropped > 0) this.#flush();
    }, 60_000);
    this.#timer.unref();
  }

  #flush(): void {
    log.warn(
      { refusedPerClient: this.#refused, droppedNodeWide: this.#dropped },
      "connections refused: a client address is over HEADWATER_MAX_CONNECTIONS_PER_CLIENT or the node over HEADWATER_MAX_CONNECTIONS",
    );
    this.#refused = 0;
    this.#dropped = 0;
  }
}

/** The api role's server, with every bound above; `handler` answers each request. */
export function createHttpServer(options: HttpServerOptions, handler: http.RequestListener): http.Server {
  const { requestTimeoutMs } = options;
  const server = http.createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(60_000, requestTimeoutMs),
      // How often Node looks for requests past their deadline (its default, 30 s, would let one live 30 s longer).
      connectionsCheckingInterval: Math.min(5_000, Math.max(50, Math.floor(requestTimeoutMs / 4))),
      // Longer than the usual client and proxy idle timeouts, so a client never reuses a socket the server is closing.
      keepAliveTimeout: 65_000,
    },
    handler,
  );

  // The response in flight on each socket (a property of the socket: this runs for every request,
  // so no map and no closure per request), and sockets whose last request was answered before its
  // body arrived.
  const answeredEarly = new WeakSet<stream.Duplex>();
  const graceMs = Math.min(UNREAD_BODY_GRACE_MS, requestTimeoutMs);
  function finished(this: http.ServerResponse): void {
    const req = this.req;
    const socket = req.socket as Tracked;
    if (socket[RESPONDING] === this) socket[RESPONDING] = undefined;
    if (req.complete) return;
    // Answered before the body arrived: Node reads and drops the rest so the connection can be
    // reused; a client that sends it slowly (or never) loses the connection after a short grace.
    answeredEarly.add(socket);
    const timer = setTimeout(() => {
      if (!req.complete) socket.destroy();
    }, graceMs);
    timer.unref();
    const done = () => {
      clearTimeout(timer);
      answeredEarly.delete(socket);
    };
    req.once("end", done);
    socket.once("close", done);
  }
  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    (req.socket as Tracked)[RESPONDING] = res;
    res.on("finish", finished);
  });

  // A malformed request, a request past its deadline or a reset socket is answered (or dropped) by itself, never thrown.
  server.on("clientError", (error: NodeJS.ErrnoException, socket: stream.Duplex) => {
    const answering = (socket as Tracked)[RESPONDING]?.headersSent === true || answeredEarly.has(socket);
    if (!socket.writable || socket.destroyed || answering) {
      socket.destroy();
      return;
    }
    const status =
      error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? "408 Request Timeout"
        : error.code === "HPE_HEADER_OVERFLOW"
          ? "431 Request Header Fields Too Large"
          : "400 Bad Request";
    closeSoon(socket, `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, REFUSED_LINGER_MS);
  });

  const refusals = new RefusalLog();
  // Past it Node closes a new connection at accept, before it costs more than a moment's descriptor.
  server.maxConnections = options.maxConnections;
  server.on("drop", () => refusals.dropped());

  const perClient = options.maxConnectionsPerClient;
  if (perClient !== undefined) {
    // The per-address check runs before the HTTP server sees the socket, so a refused connection
    // never has a request parsed or handled: it is answered 503 at once and closed.
    const httpListeners = server.listeners("connection") as ((socket: net.Socket) => void)[];
    server.removeAllListeners("connection");
    const open = new Map<string, number>();
    const refusal = tooManyConnections(perClient);
    server.on("connection", (socket: net.Socket) => {
      const address = addressOf(socket);
      if (address === undefined) {
        socket.destroy();
        return;
      }
      const count = open.get(address) ?? 0;
      if (count >= perClient) {
        refusals.refused();
        closeSoon(socket, refusal, REFUSED_LINGER_MS);
        return;
      }
      open.set(address, count + 1);
      socket.once("close", () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left <= 0) open.delete(address);
        else open.set(address, left);
      });
      for (const listener of httpListeners) listener.call(server, socket);
    });
  }
  return server;
}
