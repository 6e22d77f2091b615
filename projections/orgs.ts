import type { Projection } from "../src/projector/projection.js";
import type { OrgEvent } from "../commands/orgs/org.js";
import { statement } from "../src/readModels/statements.js";

export const orgsProjection: Projection = {
  name: "orgs",
  version: 1,
  tables: ["orgs", "org_members"],
  schema: [
    `CREATE TABLE IF NOT EXISTS orgs (
      id TEXT PRIMARY KEY, name TEXT NOT NULL, orgname TEXT NOT NULL, email TEXT NOT NULL,
      owner_id TEXT NOT NULL, created_at INTEGER NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS org_members (
      org_id TEXT NOT NULL, user_id TEXT NOT NULL, role TEXT NOT NULL, seq INTEGER NOT NULL,
      PRIMARY KEY (org_id, user_id))`,
    "CREATE INDEX IF NOT EXISTS org_members_by_user ON org_members (user_id, seq)",
  ],
  handles: new Set(["OrgCreated", "OrgMemberAdded"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as OrgEvent;
    switch (event.type) {
      case "OrgCreated": {
        const d = event.data;
        statement(db, "INSERT INTO orgs (id, name, orgname, email, owner_id, created_at) VALUES (?, ?, ?, ?, ?, ?)").run(
          d.id,
          d.name,
          d.orgname,
          d.email,
          d.ownerId,
          d.at,
        );
        break;
      }
      case "OrgMemberAdded":
        statement(db, "INSERT OR IGNORE INTO org_members (org_id, user_id, role, seq) VALUES (?, ?, ?, ?)").run(
          event.data.id,
          event.data.userId,
          event.data.role,
          recorded.position,
        );
        break;
    }
  },
};
