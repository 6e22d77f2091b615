import type { Context, Next } from "koa";
import { DomainError } from "../../commands/decider.js";
import { hashApiKey } from "../accounts/apiKeyFormat.js";
import type { AccountsReadModel } from "../readModels/accounts.js";
import type { Caller } from "./route.js";
import type { RateLimiter } from "./rateLimit.js";

export interface AuthOptions {
  readonly accounts: AccountsReadModel;
  /** Paths served without a key. */
  readonly isPublic: (method: string, path: string) => boolean;
  /** Brings the read models up to the log's head: a key issued a moment ago by the CLI is then known. */
  readonly catchUp: () => Promise<void>;
  /** Per API key, for every authenticated request. */
  readonly perKey: RateLimiter;
  /** Per client address, for requests without a valid key (public paths, unknown keys): stops floods and guessing. */
  readonly perAddress: RateLimiter;
  /** Browsers' EventSource cannot send headers: `?stream_token=` stands for the key that minted it, on the SSE path only. */
  readonly streamTokens?: { redeem(token: string, method: string, path: string): Caller; restore(token: string): void };
}

const unauthorized = (message: string) => new DomainError("unauthorized", message);

export function bearerAuth(options: AuthOptions) {
  return async function authenticate(ctx: Context, next: Next): Promise<void> {
    const address = `ip:${ctx.ip}`;
    if (options.isPublic(ctx.method, ctx.path)) {
      options.perAddress.take(address, "from this address");
      await next();
      return;
    }
    // An address that keeps failing gets no more catch-ups of the read models (the expensive part):
    // an unknown key is then a 429, while a valid key from the same address still works.
    const exhausted = !options.perAddress.has(address);
    try {
      ctx.state.caller = await identify(ctx, !exhausted);
    } catch (error) {
      if (exhausted) options.perAddress.check(address, "without a valid API key from this address");
      options.perAddress.take(address, "without a valid API key from this address");
      throw error;
    }
    const streamToken = ctx.get("authorization") === "" ? ctx.query.stream_token : undefined;
    try {
      options.perKey.take((ctx.state.caller as Caller).keyId, "with this API key");
      await next();
    } catch (error) {
      // Refused before its stream opened (a bad parameter, a rate limit): the token's one use was not spent.
      if (typeof streamToken === "string") options.streamTokens?.restore(streamToken);
      throw error;
    }
  };

  async function identify(ctx: Context, mayCatchUp: boolean): Promise<Caller> {
    const header = ctx.get("authorization");
    const streamToken = ctx.query.stream_token;
    if (header === "" && typeof streamToken === "string" && options.streamTokens) {
      return options.streamTokens.redeem(streamToken, ctx.method, ctx.path);
    }
    if (header === "") throw unauthorized("the Authorization header is missing: send Authorization: Bearer <API key>");
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized("the Authorization header must be Bearer <API key>");
    const hash = hashApiKey(match[1]);
    let found = options.accounts.userByKeyHash(hash);
    if (!found && mayCatchUp) {
      await options.catchUp().catch(() => undefined);
      found = options.accounts.userByKeyHash(hash);
    }
    if (!found) throw unauthorized("the API key is unknown or revoked");
    return { userId: found.userId, keyId: found.keyId, operator: found.operator };
  }
}
