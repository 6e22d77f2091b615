import type { Database } from "better-sqlite3";
import type { Plan } from "../../commands/users/user.js";
import { countOf, keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";
import { ReadModelMemo, type AppliedEvents } from "./memo.js";
import { usersProjection } from "../../projections/users.js";

export interface User {
  readonly id: string;
  readonly username: string;
  readonly email: string;
  readonly plan: Plan;
  readonly operator: boolean;
  /** Epoch seconds the current plan began (billing periods are anchored on it). */
  readonly planSince: number;
  readonly createdAt: number;
}

export interface Org {
  readonly id: string;
  readonly name: string;
  readonly orgname: string;
  readonly email: string;
  readonly ownerId: string;
}

export interface ApiKey {
  readonly id: string;
  readonly userId: string;
  readonly name: string | null;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  readonly seq: number;
}

interface UserRow {
  id: string;
  username: string;
  email: string;
  plan: Plan;
  operator: number;
  plan_since: number;
  created_at: number;
}
interface OrgRow {
  id: string;
  name: string;
  orgname: string;
  email: string;
  owner_id: string;
}
interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string | null;
  created_at: number;
  revoked_at: number | null;
  seq: number;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  username: r.username,
  email: r.email,
  plan: r.plan,
  operator: r.operator === 1,
  planSince: r.plan_since,
  createdAt: r.created_at,
});
const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, orgname: r.orgname, email: r.email, ownerId: r.owner_id });
const toApiKey = (r: ApiKeyRow): ApiKey => ({
  id: r.id,
  userId: r.user_id,
  name: r.name,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  seq: r.seq,
});

/** Queries over the accounts read models (users, orgs, api_keys projections). */
export class AccountsReadModel {
  readonly #users: ReadModelMemo<User>;

  /** With `changes` (the node's projector), `user(id)` is memoized until a user changes. */
  constructor(
    private readonly db: Database,
    changes?: AppliedEvents,
  ) {
    this.#users = new ReadModelMemo(changes, usersProjection.handles);
  }

  /** The holder of an unrevoked key, by the key's hash (every authenticated request: one indexed lookup). */
  userByKeyHash(hash: string): { userId: string; keyId: string; operator: boolean } | undefined {
    const row = statement<[string], { user_id: string; id: string; operator: number }>(
      this.db,
      `SELECT k.user_id, k.id, u.operator FROM api_keys k JOIN users u ON u.id = k.user_id
         WHERE k.hash = ? AND k.revoked_at IS NULL`,
    ).get(hash);
    return row && { userId: row.user_id, keyId: row.id, operator: row.operator === 1 };
  }

  keyActive(keyId: string): boolean {
    return statement(this.db, "SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL").get(keyId) !== undefined;
  }

  /** Frozen when memoized. */
  user(id: string): User | undefined {
    return this.#users.get(id, () => {
      const row = statement<[string], UserRow>(this.db, "SELECT * FROM users WHERE id = ?").get(id);
      return row && toUser(row);
    });
  }

  /** Every user, oldest first (operator CLI). */
  users(): User[] {
    return statement<[], UserRow>(this.db, "SELECT * FROM users ORDER BY created_at, id").all().map(toUser);
  }

  orgsOf(userId: string): Org[] {
    return statement<[string], OrgRow>(
      this.db,
      "SELECT o.* FROM org_members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? ORDER BY m.seq",
    )
      .all(userId)
      .map(toOrg);
  }

  isMember(userId: string, orgId: string): boolean {
    return statement(this.db, "SELECT 1 FROM org_members WHERE org_id = ? AND user_id = ?").get(orgId, userId) !== undefined;
  }

  org(id: string): Org | undefined {
    const row = statement<[string], OrgRow>(this.db, "SELECT * FROM orgs WHERE id = ?").get(id);
    return row && toOrg(row);
  }

  apiKey(id: string): ApiKey | undefined {
    const row = statement<[string], ApiKeyRow>(this.db, "SELECT * FROM api_keys WHERE id = ?").get(id);
    return row && toApiKey(row);
  }

  /** A user's usable keys, oldest first. */
  apiKeysOf(userId: string, page: PageRequest): Page<ApiKey> {
    const rows = keysetPage<ApiKeyRow>(
      this.db,
      {
        from: "api_keys",
        where: "user_id = ? AND revoked_at IS NULL",
        params: [userId],
        order: "asc",
        total: countOf(this.db, "api_key_counts", userId),
      },
      page,
    );
    return mapPage(rows, toApiKey);
  }
}
