// Delay before the next attempt of a rejected handler: capped exponential backoff with jitter.
import type { RetryPolicy } from "./bus.js";

/**
 * `attempt` is the number of attempts already failed (1 after the first failure). The delay
 * lies in [cap/2, cap] where cap = min(maxMs, initialMs * 2^(attempt-1)); the jitter keeps many
 * failing partitions from retrying in lockstep.
 */
export function retryDelay(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const cap = Math.min(policy.maxMs, policy.initialMs * 2 ** exponent);
  return Math.round(cap / 2 + (random() * cap) / 2);
}
