import type { Database } from "better-sqlite3";
import { statement } from "./statements.js";

export interface UserRow {
  id: string;
  username: string;
  email: string;
  plan: "free" | "paid";
  operator: number;
  plan_since: number;
  created_at: number;
}

export interface OrgRow {
  id: string;
  name: string;
  orgname: string;
  email: string;
  owner_id: string;
}

export interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string | null;
  created_at: number;
  revoked_at: number | null;
  seq: number;
}

/** Queries over the accounts read models (users, orgs, api_keys projections). */
export class AccountsReadModel {
  constructor(private readonly db: Database) {}

  userByKeyHash(hash: string): { userId: string; keyId: string; operator: boolean } | undefined {
    const row = statement<[string], { user_id: string; id: string; operator: number }>(this.db,
        `SELECT k.user_id, k.id, u.operator FROM api_keys k JOIN users u ON u.id = k.user_id
         WHERE k.hash = ? AND k.revoked_at IS NULL`,
      )
      .get(hash);
    return row && { userId: row.user_id, keyId: row.id, operator: row.operator === 1 };
  }

  keyActive(keyId: string): boolean {
    return statement(this.db, "SELECT 1 FROM api_keys WHERE id = ? AND revoked_at IS NULL").get(keyId) !== undefined;
  }

  user(id: string): UserRow | undefined {
    return statement<[string], UserRow>(this.db, "SELECT * FROM users WHERE id = ?").get(id);
  }

  orgsOf(userId: string): OrgRow[] {
    return statement<[string], OrgRow>(this.db,
        `SELECT o.* FROM org_members m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? ORDER BY m.seq`,
      )
      .all(userId);
  }

  isMember(userId: string, orgId: string): boolean {
    return statement(this.db, "SELECT 1 FROM org_members WHERE org_id = ? AND user_id = ?").get(orgId, userId) !== undefined;
  }

  org(id: string): OrgRow | undefined {
    return statement<[string], OrgRow>(this.db, "SELECT * FROM orgs WHERE id = ?").get(id);
  }

  apiKey(id: string): ApiKeyRow | undefined {
    return statement<[string], ApiKeyRow>(this.db, "SELECT * FROM api_keys WHERE id = ?").get(id);
  }
}
