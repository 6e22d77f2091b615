import type { Database } from "better-sqlite3";
import type { ConnectedAccountRow } from "../../projections/connectedAccounts.js";
import { countOf, keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";

/** A connected account as the application sees it: its credentials stay sealed. */
export interface ConnectedAccount {
  readonly id: string;
  readonly ownerId: string;
  readonly creatorId: string;
  readonly app: string;
  readonly name: string | null;
  readonly auth: { $sealed: string };
  /** The names of its credential fields. */
  readonly fields: readonly string[];
  readonly createdAt: number;
  readonly seq: number;
}

const toAccount = (row: ConnectedAccountRow): ConnectedAccount => ({
  id: row.id,
  ownerId: row.owner_id,
  creatorId: row.creator_id,
  app: row.app,
  name: row.name,
  auth: JSON.parse(row.auth) as { $sealed: string },
  fields: JSON.parse(row.fields) as string[],
  createdAt: row.created_at,
  seq: row.seq,
});

/** Queries over the connected accounts read model (projections/connectedAccounts.ts). */
export class ConnectedAccountsReadModel {
  constructor(private readonly db: Database) {}

  account(id: string): ConnectedAccount | undefined {
    const row = statement<[string], ConnectedAccountRow>(this.db, "SELECT * FROM connected_accounts WHERE id = ?").get(id);
    return row && toAccount(row);
  }

  accountsOf(ownerId: string, page: PageRequest): Page<ConnectedAccount> {
    const rows = keysetPage<ConnectedAccountRow>(
      this.db,
      {
        from: "connected_accounts",
        where: "owner_id = ?",
        params: [ownerId],
        order: "asc",
        total: countOf(this.db, "connected_account_counts", ownerId),
      },
      page,
    );
    return mapPage(rows, toAccount);
  }

  /** The sources whose props bind the account now, oldest id first. */
  usedBy(accountId: string): string[] {
    return statement<[string], { source_id: string }>(
      this.db,
      "SELECT source_id FROM connected_account_uses WHERE account_id = ? ORDER BY source_id",
    )
      .all(accountId)
      .map((r) => r.source_id);
  }
}
