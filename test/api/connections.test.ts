import { expect } from "chai";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { TestServer, type ApiClient } from "../harness/server.js";
import { loadConfig } from "../../src/config.js";
import { defaultMaxConnections } from "../../src/api/httpServer.js";

// What one client can hold open on a node, against the real server process: connections past the
// per-client cap are refused while the node still answers, a request whose body never arrives is
// cut off, a request answered before its body does not keep its socket, and methods the API does
// not have are client errors.

const PER_CLIENT = 8;
const REQUEST_TIMEOUT_MS = 1_500;

/** A raw TCP connection to the server; `received` collects what it sent back, `closed` settles when it ends. */
interface Raw {
  readonly socket: net.Socket;
  readonly opened: Promise<void>;
  readonly closed: Promise<void>;
  received(): string;
}

function connect(url: string): Raw {
  const socket = net.connect(Number(new URL(url).port), "127.0.0.1");
  let text = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (text += chunk));
  socket.on("error", () => {});
  const opened = new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return { socket, opened, closed, received: () => text };
}

/** Settles with how long `promise` took, or rejects with `message` after `ms`. */
async function within(promise: Promise<unknown>, ms: number, message: string): Promise<number> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
  return Date.now() - started;
}

/** One request with any method (fetch refuses TRACE), on a connection of its own. */
function rawMethod(url: string, method: string, key: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const r = http.request(url, { method, agent: false, headers: { authorization: `Bearer ${key}` } }, (response) => {
      let data = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (data += chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: data ? JSON.parse(data) : undefined }),
      );
    });
    r.on("error", reject);
    r.end();
  });
}

describe("connections a client may hold (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({
    env: {
      HEADWATER_MAX_CONNECTIONS_PER_CLIENT: String(PER_CLIENT),
      HEADWATER_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    },
  });
  let admin: ApiClient;
  const opened: Raw[] = [];

  before(async () => {
    await server.start();
    admin = server.client();
  });
  afterEach(async () => {
    for (const raw of opened.splice(0)) raw.socket.destroy();
    // Give the server a moment to see them closed (its count per address goes down on close).
    await new Promise((r) => setTimeout(r, 200));
  });
  after(() => server.stop());

  it("refuses connections past the per-client cap (503, closed) while the node still answers, and takes new ones once some close", async () => {
    // Connections held open as a slow client would: headers sent, the announced body never.
    const held = Array.from({ length: PER_CLIENT }, () => connect(server.url));
    opened.push(...held);
    await Promise.all(held.map((h) => h.opened));
    for (const h of held)
      h.socket.write(`POST /v1/sources HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 200));

    const extra = connect(server.url);
    opened.push(extra);
    await within(extra.closed, 5_000, "a connection over the cap was not closed");
    expect(extra.received()).to.match(/^HTTP\/1\.1 503 /);
    expect(extra.received()).to.match(/\r\nRetry-After: 1\r\n/i);
    expect(JSON.parse(extra.received().split("\r\n\r\n")[1])).to.include({ code: "overloaded" });
    for (const h of held) expect(h.socket.destroyed, "the connections within the cap are kept").to.equal(false);

    // One of them closes: a fresh connection is taken again and /healthz answers on it.
    held[0].socket.destroy();
    await held[0].closed;
    await new Promise((r) => setTimeout(r, 200));
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).to.equal(200);
  });

  it("cuts off a request whose body never completes after the request timeout (408, connection closed)", async () => {
    const slow = connect(server.url);
    opened.push(slow);
    await slow.opened;
    slow.socket.write(
      `POST /v1/sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.bootstrapKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    // One more byte now and then, as a slow-body client keeps a connection.
    const dribble = setInterval(() => slow.socket.write(" "), 300);
    try {
      const took = await within(slow.closed, REQUEST_TIMEOUT_MS + 5_000, "the slow request was not cut off");
      expect(took).to.be.lessThan(REQUEST_TIMEOUT_MS + 4_000);
    } finally {
      clearInterval(dribble);
    }
    expect(slow.received()).to.match(/^HTTP\/1\.1 408 /);
    expect((await admin.get("/v1/users/me")).status).to.equal(200);
  });

  it("closes the connection of a request answered before its body arrived (401) instead of waiting for the body", async () => {
    const early = connect(server.url);
    opened.push(early);
    await early.opened;
    early.socket.write(`POST /v1/sources HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`);
    const took = await within(early.closed, 10_000, "the answered request kept its socket waiting for the body");
    expect(early.received()).to.match(/^HTTP\/1\.1 401 /);
    // Within the grace (at most the request timeout here), not the request timeout's 408 after the 401.
    expect(took).to.be.lessThan(REQUEST_TIMEOUT_MS + 1_000);
    expect(early.received()).not.to.match(/408/);
  });

  it("answers a method the API does not have with 501 and a wrong method on a known path with 405 and Allow, as client errors", async () => {
    for (const method of ["TRACE", "PROPFIND", "SEARCH", "PURGE", "LINK", "MKCOL", "LOCK", "REPORT"]) {
      const r = await rawMethod(`${server.url}/v1/sources`, method, server.bootstrapKey);
      expect(r.status, method).to.equal(501);
      expect(r.body, method).to.deep.equal({ error: `the method ${method} is not implemented`, code: "not_implemented" });
    }
    const wrong = await rawMethod(`${server.url}/v1/users/me`, "PUT", server.bootstrapKey);
    expect(wrong.status).to.equal(405);
    expect(wrong.body.code).to.equal("method_not_allowed");
    expect(wrong.headers.allow)
      .to.be.a("string")
      .and.match(/\bGET\b/);
    expect(server.output, "no error-level log line for them").not.to.match(/"level":50/);
  });
});

describe("connections behind a trusted reverse proxy (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({
    env: { HEADWATER_TRUST_PROXY: "1", HEADWATER_MAX_CONNECTIONS_PER_CLIENT: "2", HEADWATER_MAX_CONNECTIONS: "6" },
  });
  const opened: Raw[] = [];

  before(() => server.start());
  after(async () => {
    for (const raw of opened.splice(0)) raw.socket.destroy();
    await server.stop();
  });

  it("does not apply the per-client cap (every connection comes from the proxy), and drops connections past the node-wide cap", async () => {
    const held = Array.from({ length: 6 }, () => connect(server.url));
    opened.push(...held);
    await Promise.all(held.map((h) => h.opened));
    await new Promise((r) => setTimeout(r, 300));
    for (const h of held) expect(h.socket.destroyed, "past the per-client cap of 2, still kept").to.equal(false);
    const extra = connect(server.url);
    opened.push(extra);
    await within(extra.closed, 5_000, "a connection past the node-wide cap was not closed");
    expect(extra.received(), "closed at accept, nothing answered").to.equal("");
    // Some close: the node takes connections again.
    for (const h of held.slice(0, 3)) h.socket.destroy();
    await Promise.all(held.slice(0, 3).map((h) => h.closed));
    await new Promise((r) => setTimeout(r, 300));
    expect((await fetch(`${server.url}/healthz`)).status).to.equal(200);
  });
});

describe("connection limits: configuration", () => {
  it("defaults to a 60 s request timeout, 256 connections per client and a node-wide cap below the open-files limit", () => {
    const config = loadConfig({});
    expect(config).to.include({ requestTimeoutMs: 60_000, maxConnectionsPerClient: 256, maxConnections: undefined });
    expect(defaultMaxConnections("/nonexistent")).to.equal(10_000);
    const limits = (soft: string) =>
      `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${soft}              1048576              files\n`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-limits-"));
    const file = (soft: string) => {
      const name = path.join(dir, soft);
      fs.writeFileSync(name, limits(soft));
      return name;
    };
    try {
      expect(defaultMaxConnections(file("1024"))).to.equal(768);
      expect(defaultMaxConnections(file("20000"))).to.equal(18_976);
      expect(defaultMaxConnections(file("unlimited"))).to.equal(1_000_000);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses bad values at start, naming each variable", () => {
    expect(
      loadConfig({ HEADWATER_REQUEST_TIMEOUT_MS: "5000", HEADWATER_MAX_CONNECTIONS_PER_CLIENT: "1", HEADWATER_MAX_CONNECTIONS: "500" }),
    ).to.include({ requestTimeoutMs: 5_000, maxConnectionsPerClient: 1, maxConnections: 500 });
    let thrown: { code?: string; message?: string } = {};
    try {
      loadConfig({ HEADWATER_REQUEST_TIMEOUT_MS: "0", HEADWATER_MAX_CONNECTIONS_PER_CLIENT: "lots", HEADWATER_MAX_CONNECTIONS: "-1" });
    } catch (error) {
      thrown = error as typeof thrown;
    }
    expect(thrown.code).to.equal("invalid_config");
    expect(thrown.message).to.match(/HEADWATER_REQUEST_TIMEOUT_MS/);
    expect(thrown.message).to.match(/HEADWATER_MAX_CONNECTIONS_PER_CLIENT/);
    expect(thrown.message).to.match(/HEADWATER_MAX_CONNECTIONS /);
  });
});
