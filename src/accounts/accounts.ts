// Users, organizations and API keys: what the operator CLI and the REST API do with them. Every
// rule is in the deciders (commands/users, orgs, apiKeys, names); this only gathers the facts they
// need (does the user exist?), generates ids and keys, and returns the log position of its last
// append, which API callers await for read-your-writes.
import { CommandHandler, latestPosition, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import { DomainError } from "../../commands/decider.js";
import { streams } from "../../commands/streams.js";
import { user as userDecider, type Plan } from "../../commands/users/user.js";
import { org as orgDecider } from "../../commands/orgs/org.js";
import { apiKey as apiKeyDecider } from "../../commands/apiKeys/apiKey.js";
import { Names } from "../../commands/names/claims.js";
import type { EventStore } from "../store/eventStore.js";
import { newId, type Clock } from "../ids.js";
import { apiKeyId, generateApiKey, hashApiKey, looksLikeApiKey } from "./apiKeyFormat.js";
import { slugify } from "../slug.js";

export interface Written {
  readonly position: number | undefined;
}

const seconds = (clock: Clock) => Math.floor(clock.now() / 1000);

export class Accounts {
  readonly #users: HandlerOf<typeof userDecider>;
  readonly #orgs: HandlerOf<typeof orgDecider>;
  readonly #keys: HandlerOf<typeof apiKeyDecider>;
  readonly #names: Names;

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
  ) {
    this.#users = new CommandHandler(store, userDecider, streams.user);
    this.#orgs = new CommandHandler(store, orgDecider, streams.org);
    this.#keys = new CommandHandler(store, apiKeyDecider, streams.apiKey);
    this.#names = new Names(store);
  }

  async userExists(userId: string): Promise<boolean> {
    return (await this.store.streamRevision(streams.user(userId))) !== undefined;
  }

  /** A user and its first API key; the username and the email are claimed first (see commands/names/claims.ts). */
  async createUser(
    input: { username: string; email: string; plan: Plan; operator?: boolean; apiKey?: string },
    options: HandleOptions = {},
  ): Promise<Written & { id: string; apiKey: string }> {
    const id = newId("u");
    const at = seconds(this.clock);
    const data = { id, username: input.username, email: input.email, plan: input.plan, operator: input.operator ?? false, at };
    // Refused input refuses before the name is claimed, so a bad request leaves nothing behind.
    userDecider.decide({ type: "CreateUser", data }, userDecider.initialState());
    if (input.apiKey !== undefined) checkKeyFormat(input.apiKey);
    const username = { scope: "username", name: input.username, holder: id, at };
    const claim = await this.#names.claim(username, options);
    // One account per email address (compared without case), claimed as a name too; the username
    // is given back when the email is taken, so a refused create holds nothing.
    let emailClaim;
    try {
      emailClaim = await this.#names.claim({ scope: "email", name: input.email.toLowerCase(), holder: id, at }, options);
    } catch (error) {
      await this.#names.release(username, options);
      throw error;
    }
    const created = await this.#users.handle(id, { type: "CreateUser", data }, options);
    const key = await this.issueKey(id, { ...(input.apiKey !== undefined ? { key: input.apiKey } : {}), name: "default" }, options);
    return { id, apiKey: key.apiKey, position: latestPosition(claim.position, emailClaim.position, created.position, key.position) };
  }

  async setPlan(userId: string, plan: Plan, options: HandleOptions = {}): Promise<Written> {
    const changed = await this.#users.handle(userId, { type: "ChangePlan", data: { id: userId, plan, at: seconds(this.clock) } }, options);
    return { position: changed.position };
  }

  async issueKey(
    userId: string,
    input: { key?: string; name?: string | null } = {},
    options: HandleOptions = {},
  ): Promise<Written & { id: string; apiKey: string }> {
    const key = input.key ?? generateApiKey();
    checkKeyFormat(key);
    const hash = hashApiKey(key);
    const id = apiKeyId(hash);
    const issued = await this.#keys.handle(
      id,
      {
        type: "IssueApiKey",
        data: { id, userId, hash, name: input.name ?? null, at: seconds(this.clock), userExists: await this.userExists(userId) },
      },
      options,
    );
    return { id, apiKey: key, position: issued.position };
  }

  /** Revokes by the key itself (operator) or by its id; `ownerId` restricts to the caller's keys. */
  async revokeKey(keyOrId: string, ownerId?: string, options: HandleOptions = {}): Promise<Written & { id: string }> {
    const id = looksLikeApiKey(keyOrId) ? apiKeyId(hashApiKey(keyOrId)) : keyOrId;
    const revoked = await this.#keys.handle(
      id,
      {
        type: "RevokeApiKey",
        data: { id, ...(ownerId !== undefined ? { userId: ownerId } : {}), at: seconds(this.clock) },
      },
      options,
    );
    return { id, position: revoked.position };
  }

  async createOrg(
    input: { name: string; ownerId: string; email?: string },
    options: HandleOptions = {},
  ): Promise<Written & { id: string; name: string; orgname: string; email: string; owner_id: string }> {
    const id = newId("o");
    const at = seconds(this.clock);
    const data = {
      id,
      name: input.name,
      orgname: slugify(input.name),
      email: input.email ?? "",
      ownerId: input.ownerId,
      at,
      ownerExists: await this.userExists(input.ownerId),
    };
    orgDecider.decide({ type: "CreateOrg", data }, orgDecider.initialState());
    const claim = await this.#names.claim({ scope: "orgname", name: data.orgname, holder: id, at }, options);
    const created = await this.#orgs.handle(id, { type: "CreateOrg", data }, options);
    return {
      id,
      name: data.name,
      orgname: data.orgname,
      email: data.email,
      owner_id: data.ownerId,
      position: latestPosition(claim.position, created.position),
    };
  }

  async addOrgMember(orgId: string, userId: string, options: HandleOptions = {}): Promise<Written> {
    const added = await this.#orgs.handle(
      orgId,
      {
        type: "AddMember",
        data: { id: orgId, userId, role: "member", at: seconds(this.clock), userExists: await this.userExists(userId) },
      },
      options,
    );
    return { position: added.position };
  }
}

function checkKeyFormat(key: string): void {
  if (!looksLikeApiKey(key)) throw new DomainError("invalid_api_key", "an API key is hw_ followed by 40 letters or digits");
}
