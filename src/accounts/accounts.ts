import { handleCommand } from "../../commands/handler.js";
import { CommandRejected } from "../../commands/decider.js";
import { user, userStream, type Plan } from "../../commands/users/user.js";
import { createUser } from "../../commands/users/create.js";
import { changePlan } from "../../commands/users/changePlan.js";
import { org, orgStream } from "../../commands/orgs/org.js";
import { createOrg } from "../../commands/orgs/create.js";
import { addMember } from "../../commands/orgs/addMember.js";
import { apiKey, apiKeyStream } from "../../commands/apiKeys/apiKey.js";
import { issueApiKey } from "../../commands/apiKeys/issue.js";
import { revokeApiKey } from "../../commands/apiKeys/revoke.js";
import { uniqueName, nameStream } from "../../commands/names/name.js";
import { claimName } from "../../commands/names/claim.js";
import type { EventStore } from "../store/eventStore.js";
import { newId, type Clock } from "../ids.js";
import { apiKeyId, generateApiKey, hashApiKey, looksLikeApiKey } from "./apiKeyFormat.js";
import { slugify } from "../slug.js";

// Account operations shared by the operator CLI and the REST API. Each returns the log position
// of its last append, which API callers await on their projector for read-your-writes.

export interface AccountsContext {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly metadata?: Record<string, unknown>;
}

export interface Written {
  readonly position: number | undefined;
}

const seconds = (clock: Clock) => Math.floor(clock.now() / 1000);
const maxPosition = (...positions: (number | undefined)[]) =>
  positions.reduce<number | undefined>((a, b) => (b === undefined ? a : Math.max(a ?? 0, b)), undefined);

export async function userExists(store: EventStore, userId: string): Promise<boolean> {
  return (await store.readStream(userStream(userId), { maxCount: 1 })).length > 0;
}

export async function createUserAccount(
  ctx: AccountsContext,
  input: { username: string; email: string; plan: Plan; operator?: boolean; apiKey?: string },
): Promise<Written & { id: string; apiKey: string }> {
  const id = newId("u");
  const at = seconds(ctx.clock);
  const options = { metadata: ctx.metadata };
  // The name is claimed first: a crash before the user stream is written leaves the name held by
  // an id that never existed, which is safe (it only blocks that username until released).
  const claim = await handleCommand(ctx.store, nameStream("username", input.username), uniqueName, claimName,
    { scope: "username", name: input.username, holder: id, at }, options);
  const created = await handleCommand(ctx.store, userStream(id), user, createUser,
    { id, username: input.username, email: input.email, plan: input.plan, operator: input.operator ?? false, at }, options);
  const key = await issueKey(ctx, id, { key: input.apiKey, name: "default" });
  return { id, apiKey: key.apiKey, position: maxPosition(claim.position, created.position, key.position) };
}

export async function setPlan(ctx: AccountsContext, userId: string, plan: Plan): Promise<Written> {
  const handled = await handleCommand(ctx.store, userStream(userId), user, changePlan,
    { id: userId, plan, at: seconds(ctx.clock) }, { metadata: ctx.metadata });
  return { position: handled.position };
}

export async function issueKey(
  ctx: AccountsContext,
  userId: string,
  options: { key?: string; name?: string | null } = {},
): Promise<Written & { id: string; apiKey: string }> {
  if (!(await userExists(ctx.store, userId))) throw new CommandRejected("not_found", `user ${userId} not found`, 404);
  const key = options.key ?? generateApiKey();
  if (!looksLikeApiKey(key)) {
    throw new CommandRejected("invalid_api_key", "an API key is hw_ followed by 40 letters or digits", 400);
  }
  const hash = hashApiKey(key);
  const id = apiKeyId(hash);
  const handled = await handleCommand(ctx.store, apiKeyStream(id), apiKey, issueApiKey,
    { id, userId, hash, name: options.name ?? null, at: seconds(ctx.clock) }, { metadata: ctx.metadata });
  return { id, apiKey: key, position: handled.position };
}

/** Revokes by the key itself (operator) or by its id; `ownerId` restricts to the caller's keys. */
export async function revokeKey(ctx: AccountsContext, keyOrId: string, ownerId?: string): Promise<Written & { id: string }> {
  const id = looksLikeApiKey(keyOrId) ? apiKeyId(hashApiKey(keyOrId)) : keyOrId;
  const handled = await handleCommand(ctx.store, apiKeyStream(id), apiKey, revokeApiKey,
    { id, userId: ownerId, at: seconds(ctx.clock) }, { metadata: ctx.metadata });
  return { id, position: handled.position };
}

export async function createOrganization(
  ctx: AccountsContext,
  input: { name: string; ownerId: string; email?: string },
): Promise<Written & { id: string; name: string; orgname: string; email: string; owner_id: string }> {
  if (!(await userExists(ctx.store, input.ownerId))) {
    throw new CommandRejected("not_found", `user ${input.ownerId} not found`, 404);
  }
  const id = newId("o");
  const at = seconds(ctx.clock);
  const orgname = slugify(input.name);
  if (orgname === "") throw new CommandRejected("invalid_name", "the organization name needs letters or digits", 400);
  const email = input.email ?? "";
  const claim = await handleCommand(ctx.store, nameStream("orgname", orgname), uniqueName, claimName,
    { scope: "orgname", name: orgname, holder: id, at }, { metadata: ctx.metadata });
  const created = await handleCommand(ctx.store, orgStream(id), org, createOrg,
    { id, name: input.name, orgname, email, ownerId: input.ownerId, at }, { metadata: ctx.metadata });
  return { id, name: input.name, orgname, email, owner_id: input.ownerId, position: maxPosition(claim.position, created.position) };
}

export async function addOrgMember(ctx: AccountsContext, orgId: string, userId: string): Promise<Written> {
  if (!(await userExists(ctx.store, userId))) throw new CommandRejected("not_found", `user ${userId} not found`, 404);
  const handled = await handleCommand(ctx.store, orgStream(orgId), org, addMember,
    { id: orgId, userId, role: "member", at: seconds(ctx.clock) }, { metadata: ctx.metadata });
  return { position: handled.position };
}
