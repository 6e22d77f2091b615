import type { Context, Next } from "koa";
import { ApiError } from "./errors.js";
import { hashApiKey } from "../accounts/apiKeyFormat.js";
import type { AccountsReadModel } from "../readModels/accounts.js";
import type { Caller } from "./route.js";

export interface AuthOptions {
  readonly accounts: AccountsReadModel;
  /** Paths served without a key. */
  readonly isPublic: (method: string, path: string) => boolean;
  /** Brings the read models up to the log's head: a key issued a moment ago by the CLI is then known. */
  readonly catchUp: () => Promise<void>;
}

const unauthorized = (message: string) =>
  new ApiError(401, "unauthorized", message, undefined, { "WWW-Authenticate": 'Bearer realm="headwater"' });

export function bearerAuth(options: AuthOptions) {
  return async function authenticate(ctx: Context, next: Next): Promise<void> {
    if (options.isPublic(ctx.method, ctx.path)) return next();
    const header = ctx.get("authorization");
    if (header === "") throw unauthorized("the Authorization header is missing: send Authorization: Bearer <API key>");
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized("the Authorization header must be Bearer <API key>");
    const hash = hashApiKey(match[1]!);
    let found = options.accounts.userByKeyHash(hash);
    if (!found) {
      await options.catchUp().catch(() => undefined);
      found = options.accounts.userByKeyHash(hash);
    }
    if (!found) throw unauthorized("the API key is unknown or revoked");
    const caller: Caller = { userId: found.userId, keyId: found.keyId, operator: found.operator };
    ctx.state.caller = caller;
    return next();
  };
}
