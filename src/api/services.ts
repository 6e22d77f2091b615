import type { Database } from "better-sqlite3";
import type { EventStore } from "../store/eventStore.js";
import type { Projector } from "../projector/projector.js";
import type { AccountsReadModel } from "../readModels/accounts.js";
import type { UsageReadModel } from "../readModels/usage.js";
import type { Clock } from "../ids.js";
import type { Config } from "../config.js";
import type { SourcesReadModel } from "../readModels/sources.js";
import type { ComponentCatalog } from "../components/catalog.js";
import type { ComponentCache } from "../runner/components.js";
import type { SourceLifecycle } from "../sources/lifecycle.js";
import type { QuotaGuard } from "../sources/quota.js";
import type { InvocationQueue } from "../runner/invocations.js";
import type { Admission } from "../runner/admission.js";

/** What route handlers may use; built once per node in src/node.ts. */
export interface Services {
  readonly config: Config;
  readonly store: EventStore;
  readonly projector: Projector;
  readonly db: Database;
  readonly accounts: AccountsReadModel;
  readonly usage: UsageReadModel;
  readonly clock: Clock;
  readonly sources: SourcesReadModel;
  readonly components: ComponentCache;
  readonly catalog: ComponentCatalog;
  readonly lifecycle: SourceLifecycle;
  readonly quota: QuotaGuard;
  readonly admission: Admission;
  readonly invocations: InvocationQueue;
  /** How long a request waits for a run's answer (the run timeout plus slack). */
  readonly runWaitMs: number;
  /** Base URL of this node's public address, without /v1. */
  publicUrl(): string;
  endpointUrl(endpointId: string): string;
  /** Awaits the node's projections up to a write's position, so the answer reflects the write. */
  written<T extends { position: number | undefined }>(write: Promise<T>): Promise<T>;
}
