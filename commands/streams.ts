// Every stream name of the log, in one place: one stream per aggregate, prefixed by its id
// (ARCHITECTURE.md, stream naming), plus the per-emitter streams a source's runs write.

export const streams = {
  user: (userId: string) => `user-${userId}`,
  org: (orgId: string) => `org-${orgId}`,
  apiKey: (keyId: string) => `apikey-${keyId}`,
  /** A unique name (username, orgname, a source's name_slug in its owner's namespace, key@version in the registry). */
  name: (scope: string, name: string) => `name-${scope}-${name}`,
  component: (componentId: string) => `component-${componentId}`,
  source: (sourceId: string) => `source-${sourceId}`,
  /** An emitter's emitted events, each run's events with the state they leave (newest 100 events kept). */
  emitter: (emitterId: string) => `emitter-${emitterId}`,
  /** The state of runs that emitted nothing (newest kept). */
  emitterDb: (emitterId: string) => `sourcedb-${emitterId}`,
  /** One RunLogged per execution of user code (newest 100 kept). */
  runLogs: (emitterId: string) => `logs-${emitterId}`,
  /** The last fired tick of a source's timer (newest kept). */
  timer: (sourceId: string) => `timer-${sourceId}`,
  webhook: (webhookId: string) => `webhook-${webhookId}`,
  subscription: (subscriptionId: string) => `subscription-${subscriptionId}`,
  autoSubscription: (autoSubscriptionId: string) => `autosubscription-${autoSubscriptionId}`,
  /** A listener's deliveries: every attempt, and what waits for it while it fails (webhooks). */
  deliveries: (listenerId: string) => `deliveries-${listenerId}`,
  /** The router's lease and how far it routed. */
  router: () => "router",
  workflow: (workflowId: string) => `workflow-${workflowId}`,
  account: (accountId: string) => `account-${accountId}`,
} as const;

/** What a deleted source or workflow leaves behind besides its command stream (kept for audit): all truncated. */
export const emitterDataStreams = (emitterId: string): string[] => [
  streams.emitter(emitterId),
  streams.emitterDb(emitterId),
  streams.runLogs(emitterId),
  streams.timer(emitterId),
];
export const sourceDataStreams = emitterDataStreams;

/** The streams that tell a resource's history, by its id prefix (operator `audit`). */
export function historyStreams(resourceId: string): string[] | undefined {
  const prefix = /^([a-z]+)_[0-9a-z]+$/.exec(resourceId)?.[1];
  switch (prefix) {
    case "u":
      return [streams.user(resourceId)];
    case "o":
      return [streams.org(resourceId)];
    case "k":
      return [streams.apiKey(resourceId)];
    case "sc":
      return [streams.component(resourceId)];
    case "dc":
      return [streams.source(resourceId)];
    case "wh":
      return [streams.webhook(resourceId)];
    case "sub":
      return [streams.subscription(resourceId)];
    case "asub":
      return [streams.autoSubscription(resourceId)];
    case "p":
      return [streams.workflow(resourceId)];
    case "apn":
      return [streams.account(resourceId)];
    default:
      return undefined;
  }
}
