import type { Clock } from "../ids.js";
import type { SourceRunner } from "../runner/sourceRunner.js";
import type { Access } from "./access.js";
import type { AccountsReadModel } from "../readModels/accounts.js";
import type { UsageReadModel } from "../readModels/usage.js";
import type { SourcesReadModel } from "../readModels/sources.js";
import type { EmittedEventsReadModel } from "../readModels/emittedEvents.js";
import type { RunLogsReadModel } from "../readModels/runLogs.js";
import type { ConnectedAccountsReadModel } from "../readModels/connectedAccounts.js";
import type { ConnectedAccounts } from "../connectedAccounts/connectedAccounts.js";
import type { Accounts } from "../accounts/accounts.js";
import type { ComponentCache } from "../components/componentCache.js";
import type { ComponentCatalog } from "../components/catalog.js";
import type { SourceLifecycle } from "../sources/lifecycle.js";
import type { EmitterStore } from "../../commands/emitters/emitterStore.js";
import type { Admission } from "../runner/admission.js";
import type { InvocationQueue } from "../runner/invocations.js";
import type { Projector } from "../projector/projector.js";
import type { Subscriptions } from "../subscriptions/subscriptions.js";
import type { Webhooks } from "../subscriptions/webhooks.js";
import type { SubscriptionsReadModel } from "../readModels/subscriptions.js";
import type { WebhooksReadModel } from "../readModels/webhooks.js";
import type { DeliveriesReadModel } from "../readModels/deliveries.js";
import type { Resends } from "../delivery/resend.js";
import type { Destinations } from "../destinations/destinations.js";
import type { ManualActionRuns } from "../components/actionRunner.js";
import type { PropOptions } from "../components/propOptions.js";
import type { WorkflowService } from "../workflows/service.js";
import type { WorkflowsReadModel } from "../readModels/workflows.js";
import type { WorkflowRunQueue } from "../workflows/runner.js";
import type { StreamTokens } from "./streamTokens.js";

/** Limits and settings the HTTP layer applies (from the node's config). */
export interface ApiSettings {
  readonly maxBodyBytes: number;
  readonly endpointMaxBodyBytes: number;
  readonly endpointRatePerSecond: number;
  readonly endpointBurst: number;
  readonly apiRatePerSecond: number;
  readonly apiBurst: number;
  readonly anonymousRatePerSecond: number;
  readonly anonymousBurst: number;
  readonly trustProxy: boolean;
  readonly freeDailyInvocations: number;
  readonly freeDailyComputeMs: number;
  readonly sseHeartbeatMs: number;
  /** How long a request waits for a run's answer (custom responses, manual runs). */
  readonly runWaitMs: number;
}

/**
 * Everything routes may use: read models, application services and a few node facts, never the
 * store or the database. Each route module takes the narrow Pick it needs.
 */
export interface ApiDeps {
  readonly settings: ApiSettings;
  readonly clock: Clock;
  readonly access: Access;
  readonly accountsView: AccountsReadModel;
  readonly accounts: Accounts;
  readonly usage: UsageReadModel;
  readonly sources: SourcesReadModel;
  readonly events: EmittedEventsReadModel;
  readonly runLogs: RunLogsReadModel;
  readonly connectedAccounts: ConnectedAccounts;
  readonly connectedAccountsView: ConnectedAccountsReadModel;
  readonly components: ComponentCache;
  readonly catalog: ComponentCatalog;
  readonly lifecycle: SourceLifecycle;
  /** A custom-response request also run beside its source's batch when that lasts (SourceRunner.besideIfLong). */
  readonly runner: Pick<SourceRunner, "besideIfLong">;
  readonly emitters: Pick<EmitterStore, "deleteEvents">;
  readonly subscriptions: Subscriptions;
  readonly subscriptionsView: SubscriptionsReadModel;
  readonly webhooks: Webhooks;
  readonly webhooksView: WebhooksReadModel;
  readonly deliveriesView: DeliveriesReadModel;
  readonly deliveries: Resends;
  readonly admission: Admission;
  readonly invocations: InvocationQueue;
  readonly workflows: WorkflowService;
  readonly workflowsView: WorkflowsReadModel;
  readonly workflowRuns: WorkflowRunQueue;
  readonly projector: Pick<Projector, "position" | "waitFor" | "onApplied" | "catchUp">;
  /** Performs actions' $.send.http/email/s3. */
  readonly destinations: Destinations;
  /** Actions run by hand (POST /components/{id}/run), in this node's sandbox as hooks are. */
  readonly actionRuns: ManualActionRuns;
  /** Props' options for a component being configured (POST /components/{key_or_id}/props/{prop}/options). */
  readonly propOptions: PropOptions;
  /** Single-use tokens that open one source's SSE stream without the Authorization header (browsers). */
  readonly streamTokens: StreamTokens;
  /** Base URL of this node's public address, without /v1. */
  publicUrl(): string;
  endpointUrl(endpointId: string): string;
}

/** Read-your-writes: awaits the node's read models up to a write's position, so the answer reflects the write. */
export async function written<T extends { position: number | undefined }>(deps: Pick<ApiDeps, "projector">, write: Promise<T>): Promise<T> {
  const result = await write;
  if (result.position !== undefined) await deps.projector.waitFor(result.position);
  return result;
}
