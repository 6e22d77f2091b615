// Stream tokens let a browser open an EventSource, which cannot send an Authorization header:
// an authenticated POST mints one for one source; GET /sources/{id}/sse?stream_token=… accepts it
// once, within 60 s, on any node sharing HEADWATER_SECRET_KEY. The stream that opens runs as the
// key that minted it, so revoking that key still ends it at the next heartbeat.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { LRUCache } from "lru-cache";
import { DomainError } from "../../commands/decider.js";
import type { Clock } from "../ids.js";
import type { Caller } from "./route.js";

export const STREAM_TOKEN_TTL_MS = 60_000;
/** The one path a token opens, with the source or workflow it names. */
const SSE_PATH = /^\/(?:sources|workflows)\/([^/]{1,100})\/sse$/;

interface Claims {
  /** The source or workflow whose stream this token opens. */
  readonly s: string;
  readonly u: string;
  readonly k: string;
  readonly o: boolean;
  /** Expiry, epoch ms. */
  readonly e: number;
  /** Makes each token unique: what single use remembers. */
  readonly n: string;
}

const refused = (message: string) => new DomainError("unauthorized", message);

export class StreamTokens {
  /** Nonces already used on this node, until their token expires. */
  readonly #used = new LRUCache<string, true>({ max: 100_000, ttl: STREAM_TOKEN_TTL_MS, ttlAutopurge: false });

  constructor(
    private readonly key: Buffer,
    private readonly clock: Clock,
    /** Whether the minting key is still valid (checked again when the token is used). */
    private readonly keyActive: (keyId: string) => boolean,
  ) {}

  mint(caller: Caller, sourceId: string): { token: string; expiresAtMs: number } {
    const claims: Claims = {
      s: sourceId,
      u: caller.userId,
      k: caller.keyId,
      o: caller.operator,
      e: this.clock.now() + STREAM_TOKEN_TTL_MS,
      n: randomBytes(12).toString("base64url"),
    };
    const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
    return { token: `st_${body}.${this.#sign(body)}`, expiresAtMs: claims.e };
  }

  /** The caller a token stands for, if it is valid for this request; it cannot be used again. */
  redeem(token: string, method: string, path: string): Caller {
    const match = SSE_PATH.exec(path);
    if (method !== "GET" || !match) throw refused("a stream token only opens GET /sources/{id}/sse or /workflows/{id}/sse");
    const [body, signature] = token.startsWith("st_") ? token.slice(3).split(".", 2) : [];
    if (!body || !signature || !this.#verify(body, signature)) throw refused("the stream token is not valid");
    const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Claims;
    if (claims.s !== decodeURIComponent(match[1])) throw refused("the stream token was minted for another source");
    if (claims.e <= this.clock.now()) throw refused("the stream token has expired: mint a new one");
    if (this.#used.has(claims.n)) throw refused("the stream token was already used: mint a new one");
    if (!this.keyActive(claims.k)) throw refused("the API key that minted this stream token is revoked");
    this.#used.set(claims.n, true, { ttl: Math.max(1, claims.e - this.clock.now()) });
    return { userId: claims.u, keyId: claims.k, operator: claims.o };
  }

  /**
   * Makes a redeemed token usable again: the request it was redeemed for failed before its stream
   * opened (a bad query, say), so the single use was not spent. A token is never made valid beyond
   * its expiry or for anything but its own stream.
   */
  restore(token: string): void {
    const [body, signature] = token.startsWith("st_") ? token.slice(3).split(".", 2) : [];
    if (!body || !signature || !this.#verify(body, signature)) return;
    this.#used.delete((JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Claims).n);
  }

  #sign(body: string): string {
    return createHmac("sha256", this.key).update(`stream-token.${body}`).digest("base64url");
  }

  #verify(body: string, signature: string): boolean {
    const expected = Buffer.from(this.#sign(body));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}
