import type { Projection } from "../src/projector/projection.js";
import type { WorkflowEvent } from "../commands/workflows/workflow.js";
import { bumpCount, countTable } from "./counts.js";
import { statement } from "../src/readModels/statements.js";

/** A row of `workflows`: the current version; trigger and steps as JSON (step props as stored: secrets sealed). */
export interface WorkflowRow {
  id: string;
  owner_id: string;
  creator_id: string;
  key: string;
  name: string;
  description: string | null;
  version: number;
  deployment_id: string;
  endpoint_id: string | null;
  trigger: string;
  steps: string;
  error_workflow: number;
  active: number;
  created_at: number;
  updated_at: number;
  seq: number;
}

export const workflowsProjection: Projection = {
  name: "workflows",
  version: 1,
  tables: ["workflows", "workflow_counts"],
  schema: [
    `CREATE TABLE IF NOT EXISTS workflows (
      id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, creator_id TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,
      description TEXT, version INTEGER NOT NULL, deployment_id TEXT NOT NULL, endpoint_id TEXT UNIQUE, trigger TEXT NOT NULL,
      steps TEXT NOT NULL, error_workflow INTEGER NOT NULL, active INTEGER NOT NULL, created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL, seq INTEGER NOT NULL)`,
    "CREATE INDEX IF NOT EXISTS workflows_by_owner ON workflows (owner_id, seq)",
    "CREATE UNIQUE INDEX IF NOT EXISTS workflows_by_key ON workflows (owner_id, key)",
    countTable("workflow_counts"),
  ],
  handles: new Set(["WorkflowDeployed", "WorkflowDeleted"]),
  apply(db, recorded) {
    const event = { type: recorded.type, data: recorded.data } as WorkflowEvent;
    switch (event.type) {
      case "WorkflowDeployed": {
        const d = event.data;
        const at = Math.floor(d.at / 1000);
        const existing = statement(db, "SELECT 1 FROM workflows WHERE id = ?").get(d.id) !== undefined;
        if (!existing) {
          statement(
            db,
            `INSERT INTO workflows (id, owner_id, creator_id, key, name, description, version, deployment_id, endpoint_id, trigger,
              steps, error_workflow, active, created_at, updated_at, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            d.id,
            d.ownerId,
            d.creatorId,
            d.key,
            d.name,
            d.description,
            d.version,
            d.deploymentId,
            d.endpointId,
            JSON.stringify(d.trigger),
            JSON.stringify(d.steps),
            d.errorWorkflow ? 1 : 0,
            d.active ? 1 : 0,
            at,
            at,
            recorded.position,
          );
          bumpCount(db, "workflow_counts", d.ownerId, 1);
        } else {
          statement(
            db,
            `UPDATE workflows SET creator_id = ?, name = ?, description = ?, version = ?, deployment_id = ?, endpoint_id = ?, trigger = ?,
              steps = ?, error_workflow = ?, active = ?, updated_at = ? WHERE id = ?`,
          ).run(
            d.creatorId,
            d.name,
            d.description,
            d.version,
            d.deploymentId,
            d.endpointId,
            JSON.stringify(d.trigger),
            JSON.stringify(d.steps),
            d.errorWorkflow ? 1 : 0,
            d.active ? 1 : 0,
            at,
            d.id,
          );
        }
        break;
      }
      case "WorkflowDeleted": {
        const removed = statement(db, "DELETE FROM workflows WHERE id = ?").run(event.data.id);
        if (removed.changes > 0) bumpCount(db, "workflow_counts", event.data.ownerId, -1);
        break;
      }
    }
  },
};
