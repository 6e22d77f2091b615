import type { Projection } from "../src/projector/projection.js";
import { accountIdsIn, type ConnectedAccountEvent } from "../commands/connectedAccounts/connectedAccount.js";
import type { SourceEvent } from "../commands/sources/source.js";
import { bumpCount, countTable } from "./counts.js";
import { statement } from "../src/readModels/statements.js";

/** A row of `connected_accounts`: auth is the sealed JSON, fields the names of its credentials. */
export interface ConnectedAccountRow {
  id: string;
  owner_id: string;
  creator_id: string;
  app: string;
  name: string | null;
  auth: string;
  fields: string;
  created_at: number;
  seq: number;
}

/** Accounts, and which sources bind each (so a delete can name them). */
export const connectedAccountsProjection: Projection = {
  name: "connected_accounts",
  version: 1,
  tables: ["connected_accounts", "connected_account_counts", "connected_account_uses"],
  schema: [
    `CREATE TABLE IF NOT EXISTS connected_accounts (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, creator_id TEXT NOT NULL, app TEXT NOT NULL, name TEXT,
      auth TEXT NOT NULL, fields TEXT NOT NULL, created_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS connected_accounts_by_owner ON connected_accounts (owner_id, seq)",
    countTable("connected_account_counts"),
    `CREATE TABLE IF NOT EXISTS connected_account_uses (
      account_id TEXT NOT NULL, source_id TEXT NOT NULL, PRIMARY KEY (account_id, source_id))`,
    "CREATE INDEX IF NOT EXISTS connected_account_uses_by_source ON connected_account_uses (source_id)",
  ],
  handles: new Set(["ConnectedAccountCreated", "ConnectedAccountDeleted", "SourceDeployed", "SourceUpdated", "SourceDeleted"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as ConnectedAccountEvent | SourceEvent;
    const bind = (sourceId: string, props: Record<string, unknown>) => {
      statement(db, "DELETE FROM connected_account_uses WHERE source_id = ?").run(sourceId);
      for (const accountId of accountIdsIn(props)) {
        statement(db, "INSERT OR IGNORE INTO connected_account_uses (account_id, source_id) VALUES (?, ?)").run(accountId, sourceId);
      }
    };
    switch (event.type) {
      case "ConnectedAccountCreated": {
        const d = event.data;
        statement(
          db,
          `INSERT INTO connected_accounts (id, owner_id, creator_id, app, name, auth, fields, created_at, seq)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(d.id, d.ownerId, d.creatorId, d.app, d.name, JSON.stringify(d.auth), JSON.stringify(d.fields), d.at, recorded.position);
        bumpCount(db, "connected_account_counts", d.ownerId, 1);
        break;
      }
      case "ConnectedAccountDeleted":
        statement(db, "DELETE FROM connected_accounts WHERE id = ?").run(event.data.id);
        bumpCount(db, "connected_account_counts", event.data.ownerId, -1);
        break;
      case "SourceDeployed":
      case "SourceUpdated":
        bind(event.data.id, event.data.configuredProps);
        break;
      case "SourceDeleted":
        statement(db, "DELETE FROM connected_account_uses WHERE source_id = ?").run(event.data.id);
        break;
    }
  },
};
