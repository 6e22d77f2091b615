import type { Projection } from "../src/projector/projection.js";
import type { ApiKeyEvent } from "../commands/apiKeys/apiKey.js";
import { bumpCount, countTable } from "./counts.js";
import { statement } from "../src/readModels/statements.js";

export const apiKeysProjection: Projection = {
  name: "api_keys",
  version: 1,
  tables: ["api_keys", "api_key_counts"],
  schema: [
    `CREATE TABLE IF NOT EXISTS api_keys (
      id TEXT PRIMARY KEY, user_id TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, name TEXT,
      created_at INTEGER NOT NULL, revoked_at INTEGER, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS api_keys_by_user ON api_keys (user_id, seq)",
    countTable("api_key_counts"),
  ],
  handles: new Set(["ApiKeyIssued", "ApiKeyRevoked"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as ApiKeyEvent;
    switch (event.type) {
      case "ApiKeyIssued": {
        const d = event.data;
        statement(db, "INSERT INTO api_keys (id, user_id, hash, name, created_at, seq) VALUES (?, ?, ?, ?, ?, ?)").run(
          d.id,
          d.userId,
          d.hash,
          d.name,
          d.at,
          recorded.position,
        );
        bumpCount(db, "api_key_counts", d.userId, 1);
        break;
      }
      case "ApiKeyRevoked":
        // Listings show usable keys only; the decider emits one revocation per key.
        statement(db, "UPDATE api_keys SET revoked_at = ? WHERE id = ?").run(event.data.at, event.data.id);
        bumpCount(db, "api_key_counts", event.data.userId, -1);
        break;
    }
  },
};
