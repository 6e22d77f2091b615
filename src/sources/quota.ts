import type { AccountsReadModel } from "../readModels/accounts.js";
import type { UsageReadModel } from "../readModels/usage.js";
import type { Clock } from "../ids.js";
import { DomainError } from "../../commands/decider.js";

/** The free plan's daily allowances (UTC days). */
export interface QuotaLimits {
  readonly freeDailyInvocations: number;
  readonly freeDailyComputeMs: number;
}

export class QuotaGuard {
  constructor(
    private readonly accounts: AccountsReadModel,
    private readonly usage: UsageReadModel,
    private readonly limits: QuotaLimits,
    private readonly clock: Clock,
  ) {}

  /**
   * Why the user's runs are refused now (a free account past a daily quota), or undefined when
   * they may run; `inFlight` invocations admitted but not yet recorded count as used.
   */
  exceeded(userId: string, inFlight = 0): string | undefined {
    const user = this.accounts.user(userId);
    if (!user || user.plan === "paid") return undefined;
    const today = this.usage.today(userId, this.clock.now());
    if (today.invocations + inFlight >= this.limits.freeDailyInvocations) {
      return `the daily invocations quota (${this.limits.freeDailyInvocations}) of this free account is used up until 00:00 UTC`;
    }
    if (today.computeMs >= this.limits.freeDailyComputeMs) {
      return `the daily compute time quota (${this.limits.freeDailyComputeMs} ms) of this free account is used up until 00:00 UTC`;
    }
    return undefined;
  }

  /** Throws quota_exceeded (with when to try again: 00:00 UTC) when the quota is used up. */
  check(userId: string, inFlight = 0): void {
    const reason = this.exceeded(userId, inFlight);
    if (reason) {
      const now = this.clock.now();
      const retryAfter = Math.ceil((86_400_000 - (now % 86_400_000)) / 1000);
      throw new DomainError("quota_exceeded", reason, undefined, retryAfter);
    }
  }
}
