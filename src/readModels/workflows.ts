import type { Database } from "better-sqlite3";
import type { WorkflowRow } from "../../projections/workflows.js";
import type { WorkflowStep, WorkflowTrigger } from "../../commands/workflows/workflow.js";
import { countOf, keysetPage, mapPage, type Page, type PageRequest } from "./page.js";
import { statement } from "./statements.js";

/** A workflow's current version as the application sees it. */
export interface Workflow {
  readonly id: string;
  readonly ownerId: string;
  /** Who deployed the current version: runs are billed to them. */
  readonly creatorId: string;
  readonly key: string;
  readonly name: string;
  readonly description: string | null;
  readonly version: number;
  readonly deploymentId: string;
  readonly endpointId: string | null;
  readonly trigger: WorkflowTrigger;
  readonly steps: readonly WorkflowStep[];
  readonly errorWorkflow: boolean;
  readonly active: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly seq: number;
}

const toWorkflow = (row: WorkflowRow): Workflow => ({
  id: row.id,
  ownerId: row.owner_id,
  creatorId: row.creator_id,
  key: row.key,
  name: row.name,
  description: row.description,
  version: row.version,
  deploymentId: row.deployment_id,
  endpointId: row.endpoint_id,
  trigger: JSON.parse(row.trigger) as WorkflowTrigger,
  steps: JSON.parse(row.steps) as WorkflowStep[],
  errorWorkflow: row.error_workflow === 1,
  active: row.active === 1,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  seq: row.seq,
});

/** Queries over the workflows read model (projections/workflows.ts). */
export class WorkflowsReadModel {
  constructor(private readonly db: Database) {}

  workflow(id: string): Workflow | undefined {
    const row = statement<[string], WorkflowRow>(this.db, "SELECT * FROM workflows WHERE id = ?").get(id);
    return row && toWorkflow(row);
  }

  byKey(ownerId: string, key: string): Workflow | undefined {
    const row = statement<[string, string], WorkflowRow>(this.db, "SELECT * FROM workflows WHERE owner_id = ? AND key = ?").get(
      ownerId,
      key,
    );
    return row && toWorkflow(row);
  }

  byEndpoint(endpointId: string): Workflow | undefined {
    const row = statement<[string], WorkflowRow>(this.db, "SELECT * FROM workflows WHERE endpoint_id = ?").get(endpointId);
    return row && toWorkflow(row);
  }

  workflowsOf(ownerId: string, page: PageRequest): Page<Workflow> {
    const rows = keysetPage<WorkflowRow>(
      this.db,
      { from: "workflows", where: "owner_id = ?", params: [ownerId], order: "asc", total: countOf(this.db, "workflow_counts", ownerId) },
      page,
    );
    return mapPage(rows, toWorkflow);
  }

  /** Active workflows with a timer trigger (the scheduler's). */
  timed(): Workflow[] {
    return statement<[], WorkflowRow>(this.db, 'SELECT * FROM workflows WHERE active = 1 AND trigger LIKE \'{"type":"timer"%\'')
      .all()
      .map(toWorkflow);
  }

  /** The owner's global error workflow: the most recently deployed active one marked error_workflow. */
  errorWorkflowOf(ownerId: string): Workflow | undefined {
    const row = statement<[string], WorkflowRow>(
      this.db,
      "SELECT * FROM workflows WHERE owner_id = ? AND error_workflow = 1 AND active = 1 ORDER BY updated_at DESC, seq DESC LIMIT 1",
    ).get(ownerId);
    return row && toWorkflow(row);
  }
}
