import type { Projection } from "../src/projector/projection.js";
import { usersProjection } from "./users.js";
import { orgsProjection } from "./orgs.js";
import { apiKeysProjection } from "./apiKeys.js";
import { usageProjection } from "./usage.js";
import { componentsProjection } from "./components.js";
import { sourcesProjection } from "./sources.js";
import { emittedEventsProjection } from "./emittedEvents.js";
import { runLogsProjection } from "./runLogs.js";
import { connectedAccountsProjection } from "./connectedAccounts.js";
import { subscriptionsProjection } from "./subscriptions.js";
import { webhooksProjection } from "./webhooks.js";
import { deliveriesProjection } from "./deliveries.js";
import { workflowsProjection } from "./workflows.js";

/** Every read model a node keeps. */
export const allProjections: readonly Projection[] = [
  usersProjection,
  orgsProjection,
  apiKeysProjection,
  usageProjection,
  componentsProjection,
  sourcesProjection,
  emittedEventsProjection,
  runLogsProjection,
  connectedAccountsProjection,
  subscriptionsProjection,
  webhooksProjection,
  deliveriesProjection,
  workflowsProjection,
];
