import { TokenBucket } from "limiter";
import { LRUCache } from "lru-cache";
import { DomainError } from "../../commands/decider.js";

export interface RateLimit {
  /** Tokens added per second. */
  readonly ratePerSecond: number;
  /** Bucket size: the burst a new or idle client may send at once. */
  readonly burst: number;
}

/** Token buckets by key (an API key, an address, a source), least recently used ones forgotten. */
export class RateLimiter {
  readonly #buckets = new LRUCache<string, TokenBucket>({ max: 100_000 });

  constructor(private readonly limit: RateLimit) {}

  /** Takes one token for `key`, or throws 429 with Retry-After. */
  take(key: string, what: string): void {
    if (this.#bucket(key).tryRemoveTokens(1)) return;
    throw this.#refusal(what);
  }

  /** Whether `key` has a token left (none is taken). */
  has(key: string): boolean {
    return this.#bucket(key).content >= 1;
  }

  /** Throws 429 when `key` has no token left, without taking one. */
  check(key: string, what: string): void {
    if (this.#bucket(key).content < 1) throw this.#refusal(what);
  }

  #bucket(key: string): TokenBucket {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket({ bucketSize: this.limit.burst, tokensPerInterval: this.limit.ratePerSecond, interval: "second" });
      bucket.content = this.limit.burst; // a new client starts with its whole burst
      this.#buckets.set(key, bucket);
    }
    // The bucket refills lazily: reading content alone would not drip.
    bucket.drip();
    return bucket;
  }

  #refusal(what: string): DomainError {
    return new DomainError("rate_limited", `too many requests ${what}`, undefined, Math.max(1, Math.ceil(1 / this.limit.ratePerSecond)));
  }
}
