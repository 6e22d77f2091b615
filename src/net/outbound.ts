// The one outbound HTTP client of Headwater (component HTTP, webhooks, component_url fetches).
// It resolves DNS itself, checks every address against the address policy and then connects to
// exactly the checked address, so a DNS answer that changes between check and connect
// (rebinding) cannot reach a refused address. Redirects are followed by hand and re-checked.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import zlib from "node:zlib";
import { LRUCache } from "lru-cache";
import { classifyAddress, isIpLiteral, stripBrackets } from "./addressPolicy.js";

export type OutboundErrorCode =
  "INVALID_URL" | "BLOCKED_ADDRESS" | "DNS_FAILED" | "TIMEOUT" | "RESPONSE_TOO_LARGE" | "TOO_MANY_REDIRECTS" | "NETWORK";

export class OutboundError extends Error {
  override readonly name = "OutboundError";
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundRequest {
  readonly url: string | URL;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  readonly body?: Uint8Array | string;
  /** Whole-request deadline (connect, headers and body), default 30 s. */
  readonly timeoutMs?: number;
  /** Largest (decoded) response body accepted, default 10 MB. */
  readonly maxResponseBytes?: number;
  /** Redirects followed, default 5; 0 returns the 3xx response itself. */
  readonly maxRedirects?: number;
  /** Decode gzip / deflate / br bodies (default true). */
  readonly decompress?: boolean;
  /**
   * Reuse connections (keep-alive), pooled per checked address: a connection is only ever reused
   * for the address it was opened to, so DNS answers that change get new connections.
   */
  readonly keepAlive?: boolean;
  readonly signal?: AbortSignal;
}

export interface OutboundPolicy {
  /** Lifts the private-address guard (HEADWATER_ALLOW_PRIVATE_NETWORKS=1); for tests and trusted networks. */
  readonly allowPrivateNetworks?: boolean;
  /** DNS resolver, injectable so a test can play a rebinding resolver. Default: the OS resolver. */
  readonly resolve?: (hostname: string) => Promise<readonly { address: string; family: number }[]>;
}

export interface OutboundResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Record<string, string | string[]>;
  readonly body: Buffer;
  /** URL of the final response after redirects. */
  readonly url: string;
  readonly redirected: boolean;
  /** The address actually connected to. */
  readonly remoteAddress: string;
}

export const OUTBOUND_DEFAULTS = {
  timeoutMs: 30_000,
  maxResponseBytes: 10 * 1024 * 1024,
  maxRedirects: 5,
} as const;

const osResolve = async (hostname: string) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** Picks an address for `hostname` that the policy allows, or throws BLOCKED_ADDRESS / DNS_FAILED. */
export async function resolveAllowedAddress(hostname: string, policy: OutboundPolicy = {}): Promise<{ address: string; family: 4 | 6 }> {
  const host = stripBrackets(hostname);
  let candidates: readonly { address: string; family: number }[];
  if (isIpLiteral(host)) {
    candidates = [{ address: host, family: host.includes(":") ? 6 : 4 }];
  } else {
    try {
      candidates = await (policy.resolve ?? osResolve)(host);
    } catch (err) {
      throw new OutboundError("DNS_FAILED", `cannot resolve ${host}: ${(err as Error).message}`);
    }
    if (candidates.length === 0) throw new OutboundError("DNS_FAILED", `cannot resolve ${host}: no addresses`);
  }
  if (policy.allowPrivateNetworks) {
    const first = candidates[0];
    return { address: first.address, family: first.family === 6 ? 6 : 4 };
  }
  // Every answer must pass: a name that also points inward is refused as a whole.
  const verdicts = candidates.map((candidate) => classifyAddress(candidate.address));
  for (const verdict of verdicts) {
    if (!verdict.allowed) {
      const carrying = verdict.embeddedIPv4 ? ` carrying ${verdict.embeddedIPv4}` : "";
      throw new OutboundError(
        "BLOCKED_ADDRESS",
        `refusing to connect to ${host} (${verdict.address}, ${verdict.range} address${carrying}); ` +
          "set HEADWATER_ALLOW_PRIVATE_NETWORKS=1 to allow private networks",
      );
    }
  }
  // The pin is the normalised address that was checked, its family read off the address itself.
  const checked = verdicts[0].address;
  return { address: checked, family: checked.includes(":") ? 6 : 4 };
}

/**
 * Parses `url` as the client does and picks the address it would connect to: the WHATWG parser has
 * already turned decimal, octal, hex, percent-encoded and trailing-dot IPv4 forms into a dotted quad
 * and IPv6 into its compressed form (zone ids are invalid URLs), so the normalised host is what is checked.
 */
export async function resolveUrlAddress(url: string | URL, policy: OutboundPolicy = {}): Promise<{ address: string; family: 4 | 6 }> {
  return resolveAllowedAddress(parseUrl(url).hostname, policy);
}

function parseUrl(url: string | URL): URL {
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw new OutboundError("INVALID_URL", `invalid URL: ${String(url).slice(0, 200)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new OutboundError("INVALID_URL", `only http and https URLs are allowed, got ${parsed.protocol}`);
  }
  if (!parsed.hostname) throw new OutboundError("INVALID_URL", "URL has no hostname");
  return parsed;
}

/** Keep-alive agents, one per (scheme, checked address, port, server name); the least used are closed. */
const agents = new LRUCache<string, http.Agent>({ max: 1000, dispose: (agent) => agent.destroy() });

function pooledAgent(protocol: string, address: string, port: string, servername: string): http.Agent {
  const key = `${protocol}//${address}:${port}/${servername}`;
  let agent = agents.get(key);
  if (!agent) {
    // Idle sockets close before a typical server's keep-alive timeout (5 s in Node), so a reused one is rarely already closed.
    const options = { keepAlive: true, maxSockets: 64, maxFreeSockets: 16, timeout: 4_000 };
    agent = protocol === "https:" ? new https.Agent(options) : new http.Agent(options);
    agents.set(key, agent);
  }
  return agent;
}

/** Sends one HTTP request under the address policy, following redirects. */
export async function outboundRequest(req: OutboundRequest, policy: OutboundPolicy = {}): Promise<OutboundResponse> {
  const timeoutMs = req.timeoutMs ?? OUTBOUND_DEFAULTS.timeoutMs;
  const maxRedirects = req.maxRedirects ?? OUTBOUND_DEFAULTS.maxRedirects;
  const deadline = Date.now() + timeoutMs;
  let url = parseUrl(req.url);
  let method = (req.method ?? "GET").toUpperCase();
  let body = req.body;
  let headers = normalizeHeaders(req.headers ?? {});
  for (let hop = 0; ; hop++) {
    const response = await sendOnce(url, method, headers, body, deadline, timeoutMs, req, policy);
    const location = response.headers["location"];
    if (maxRedirects > 0 && isRedirect(response.status) && typeof location === "string") {
      if (hop >= maxRedirects) {
        throw new OutboundError("TOO_MANY_REDIRECTS", `more than ${maxRedirects} redirects from ${String(req.url)}`);
      }
      const next = parseUrl(new URL(location, url));
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = method === "HEAD" ? "HEAD" : "GET";
        body = undefined;
        headers = withoutHeaders(headers, ["content-type", "content-length"]);
      }
      // Credentials never follow a redirect to another origin.
      if (next.origin !== url.origin) headers = withoutHeaders(headers, ["authorization", "cookie"]);
      url = next;
      continue;
    }
    return { ...response, url: url.toString(), redirected: hop > 0 };
  }
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

function normalizeHeaders(headers: Readonly<Record<string, string | readonly string[]>>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return out;
}

function withoutHeaders(headers: Record<string, string | string[]>, names: string[]): Record<string, string | string[]> {
  const out = { ...headers };
  for (const name of names) delete out[name];
  return out;
}

async function sendOnce(
  url: URL,
  method: string,
  headers: Record<string, string | string[]>,
  body: Uint8Array | string | undefined,
  deadline: number,
  timeoutMs: number,
  req: OutboundRequest,
  policy: OutboundPolicy,
): Promise<Omit<OutboundResponse, "url" | "redirected">> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) throw new OutboundError("TIMEOUT", `request to ${url.host} timed out after ${timeoutMs} ms`);
  const target = await withDeadline(resolveUrlAddress(url, policy), remaining, url, timeoutMs);
  const maxBytes = req.maxResponseBytes ?? OUTBOUND_DEFAULTS.maxResponseBytes;
  const decompress = req.decompress ?? true;
  // Hands net.connect the address that was checked, whatever DNS would answer now.
  const pinnedLookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
    } else {
      callback(null, target.address, target.family);
    }
  };
  const outHeaders: Record<string, string | string[]> = { ...headers };
  if (decompress && outHeaders["accept-encoding"] === undefined) outHeaders["accept-encoding"] = "gzip, deflate, br";
  if (body !== undefined && outHeaders["content-length"] === undefined) {
    outHeaders["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
  }
  const transport = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      reject(err);
    };
    const timer = setTimeout(
      () => fail(new OutboundError("TIMEOUT", `request to ${url.host} timed out after ${timeoutMs} ms`)),
      deadline - Date.now(),
    );
    const request = transport.request(
      {
        protocol: url.protocol,
        hostname: stripBrackets(url.hostname),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method,
        headers: outHeaders,
        lookup: pinnedLookup,
        agent: req.keepAlive ? pooledAgent(url.protocol, target.address, url.port, url.hostname) : false,
        servername: isIpLiteral(url.hostname) ? undefined : url.hostname,
        auth: url.username ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined,
      },
      (res) => {
        const encoding = String(res.headers["content-encoding"] ?? "").toLowerCase();
        let stream: NodeJS.ReadableStream = res;
        if (decompress && method !== "HEAD") {
          if (encoding === "gzip" || encoding === "x-gzip") stream = res.pipe(zlib.createGunzip());
          else if (encoding === "deflate") stream = res.pipe(zlib.createInflate());
          else if (encoding === "br") stream = res.pipe(zlib.createBrotliDecompress());
        }
        const declared = Number(res.headers["content-length"]);
        if (stream === res && Number.isFinite(declared) && declared > maxBytes) {
          fail(tooLarge(url, maxBytes));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            fail(tooLarge(url, maxBytes));
            return;
          }
          chunks.push(chunk);
        });
        stream.on("error", (err: Error) => fail(new OutboundError("NETWORK", `response from ${url.host}: ${err.message}`)));
        stream.on("end", () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            statusText: res.statusMessage ?? "",
            headers: flattenHeaders(res.headers),
            body: Buffer.concat(chunks),
            remoteAddress: target.address,
          });
        });
      },
    );
    request.on("error", (err) =>
      fail(err instanceof OutboundError ? err : new OutboundError("NETWORK", `request to ${url.host} failed: ${err.message}`)),
    );
    if (req.signal) {
      if (req.signal.aborted) fail(new OutboundError("NETWORK", "request aborted"));
      req.signal.addEventListener("abort", () => fail(new OutboundError("NETWORK", "request aborted")), { once: true });
    }
    if (body !== undefined) request.end(body);
    else request.end();
  });
}

function tooLarge(url: URL, maxBytes: number): OutboundError {
  return new OutboundError("RESPONSE_TOO_LARGE", `response from ${url.host} is larger than ${maxBytes} bytes`);
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = value;
  return out;
}

async function withDeadline<T>(promise: Promise<T>, ms: number, url: URL, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new OutboundError("TIMEOUT", `request to ${url.host} timed out after ${timeoutMs} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
