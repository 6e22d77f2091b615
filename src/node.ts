import { VERSION } from "./version.js";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { openEventStore } from "./store/open.js";
import { openReadModels } from "./readModels/database.js";
import { ReadModelCheckpoints } from "./readModels/checkpoints.js";
import { Projector } from "./projector/projector.js";
import { allProjections } from "../projections/index.js";
import { AccountsReadModel } from "./readModels/accounts.js";
import { UsageReadModel } from "./readModels/usage.js";
import { PER_SOURCE_MEMO_ENTRIES } from "./readModels/memo.js";
import { SourcesReadModel } from "./readModels/sources.js";
import { ComponentsReadModel } from "./readModels/components.js";
import { EmittedEventsReadModel } from "./readModels/emittedEvents.js";
import { RunLogsReadModel } from "./readModels/runLogs.js";
import { ConnectedAccountsReadModel } from "./readModels/connectedAccounts.js";
import { ConnectedAccounts } from "./connectedAccounts/connectedAccounts.js";
import { Accounts } from "./accounts/accounts.js";
import { DomainError } from "../commands/decider.js";
import { EmitterStore } from "../commands/emitters/emitterStore.js";
import { RunLogStore } from "../commands/runLogs/runLogStore.js";
import { TimerStore } from "../commands/timers/timerStore.js";
import { systemClock, type Clock } from "./ids.js";
import { createApp } from "./api/app.js";
import { createHttpServer, defaultMaxConnections } from "./api/httpServer.js";
import { SseHub } from "./api/sse.js";
import { Access } from "./api/access.js";
import type { ApiDeps } from "./api/deps.js";
import type { Config } from "./config.js";
import { DataDirLock } from "./dataDir.js";
import { openBus } from "./bus/open.js";
import type { BusConsumer } from "./bus/bus.js";
import { openReplyChannel } from "./bus/reply.js";
import { partitionBacklogs } from "./bus/keyedDispatcher.js";
import { IsolatedRuntime } from "./runtime/componentRuntime.js";
import { DEFAULT_LIMITS } from "./runtime/index.js";
import { ComponentCache } from "./components/componentCache.js";
import { ComponentCatalog } from "./components/catalog.js";
import { SourceRunner } from "./runner/sourceRunner.js";
import { INVOCATION_PARTITIONS, INVOCATIONS_TOPIC, InvocationQueue, startRunner } from "./runner/invocations.js";
import { SourceLifecycle } from "./sources/lifecycle.js";
import { QuotaGuard } from "./sources/quota.js";
import { Admission } from "./runner/admission.js";
import { TimerScheduler } from "./scheduler/timers.js";
import { Retention } from "./projector/retention.js";
import { loadSealer } from "./secrets/sealer.js";
import { outboundRequest } from "./net/outbound.js";
import { SubscriptionsReadModel } from "./readModels/subscriptions.js";
import { WebhooksReadModel } from "./readModels/webhooks.js";
import { DeliveriesReadModel } from "./readModels/deliveries.js";
import { Subscriptions } from "./subscriptions/subscriptions.js";
import { Webhooks } from "./subscriptions/webhooks.js";
import { Router } from "./delivery/router.js";
import { DeliveryWorker } from "./delivery/worker.js";
import { Resends } from "./delivery/resend.js";
import { DELIVERIES_TOPIC, DELIVERY_PARTITIONS } from "./delivery/messages.js";
import { routedUpTo } from "./delivery/router.js";
import { Destinations } from "./destinations/destinations.js";
import { ManualActionRuns, runAction } from "./components/actionRunner.js";
import { OPTIONS_TIMEOUT_MS, PropOptions } from "./components/propOptions.js";
import { actionProps } from "./components/actionProps.js";
import { WorkflowsReadModel } from "./readModels/workflows.js";
import { WorkflowService } from "./workflows/service.js";
import { WORKFLOW_RUNS_TOPIC, WorkflowRunQueue, WorkflowRunner, startWorkflowRunner, type StepExecutor } from "./workflows/runner.js";
import { log, setLogLevel } from "./observability/log.js";
import { StartingResponder } from "./api/starting.js";
import { Metrics } from "./observability/metrics.js";
import { Readiness } from "./observability/health.js";
import { StreamTokens } from "./api/streamTokens.js";
import type { BusLog } from "./bus/bus.js";

/** The bus reports through the server's logger. */
const busLog: BusLog = (entry) =>
  log[entry.level]({ ...entry.fields, ...(entry.error ? { err: entry.error } : {}) }, `bus: ${entry.message}`);

export interface RunningNode {
  /** Where this process listens. */
  readonly url: string;
  /** Where clients reach it (HEADWATER_PUBLIC_URL, else the listening address). */
  readonly publicUrl: string;
  readonly bootstrapKey: string | undefined;
  /**
   * Stops the node: new work is refused at once, requests and runs in flight get `graceMs` to
   * finish (0: none, like a crash for them), then everything closes.
   */
  close(graceMs?: number): Promise<void>;
}

export { VERSION };
const READ_MODELS_FILE = "readmodels.db";
export const readModelsFile = (config: Pick<Config, "dataDir">) => path.join(config.dataDir, READ_MODELS_FILE);

/** On an empty log, creates the operator account so a fresh install can be used at once. */
async function bootstrap(accounts: Accounts, headPosition: number, config: Config): Promise<string | undefined> {
  if (headPosition !== 0) return undefined;
  try {
    const created = await accounts.createUser(
      {
        username: config.bootstrapUsername,
        email: config.bootstrapEmail,
        plan: "paid",
        operator: true,
        ...(config.bootstrapKey ? { apiKey: config.bootstrapKey } : {}),
      },
      { metadata: { by: "bootstrap" } },
    );
    return created.apiKey;
  } catch (error) {
    // Another node sharing the store bootstrapped first.
    if (error instanceof DomainError && (error.code === "name_taken" || error.code === "already_exists")) return undefined;
    throw error;
  }
}

/** Delays between webhook retries: doubling from `first` up to `max` (the last step repeats). */
function retrySchedule(first: number, max: number): number[] {
  const delays: number[] = [];
  for (let d = first; d < max && delays.length < 30; d *= 2) delays.push(d);
  delays.push(max);
  return delays;
}

/** A node's id names its reply topic; kept in the data directory so restarts reuse it. */
function nodeIdOf(config: Config): string {
  if (config.nodeId) return config.nodeId;
  const file = path.join(config.dataDir, "node-id");
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    const id = `node-${randomBytes(6).toString("hex")}`;
    fs.writeFileSync(file, id);
    return id;
  }
}

export async function startNode(config: Config, clock: Clock = systemClock): Promise<RunningNode> {
  // First of all: a second node on this directory is refused before it touches anything.
  const lock = DataDirLock.acquire(config.dataDir);
  setLogLevel(config.logLevel);
  const roles = new Set(config.roles);
  const closers: (() => Promise<void> | void)[] = [() => lock.release()];

  // The api role takes its port first and answers probes while the node starts (src/api/starting.ts).
  let server: http.Server | undefined;
  let listeningUrl = "";
  let inFlightRequests = 0;
  const requestsDrained = new Set<() => void>();
  const starting = new StartingResponder(VERSION);
  let handleRequest: http.RequestListener = starting.handle;
  if (roles.has("api")) {
    const listening = createHttpServer(
      {
        requestTimeoutMs: config.requestTimeoutMs,
        // Behind a trusted reverse proxy every connection comes from the proxy: its own per-client limits apply instead.
        maxConnectionsPerClient: config.trustProxy ? undefined : config.maxConnectionsPerClient,
        maxConnections: config.maxConnections ?? defaultMaxConnections(),
      },
      (req, res) => handleRequest(req, res),
    );
    listening.on("request", (_req, res) => {
      inFlightRequests++;
      res.once("close", () => {
        inFlightRequests--;
        if (inFlightRequests === 0) for (const drained of requestsDrained) drained();
      });
    });
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once("error", reject);
      listening.listen(config.port, config.host, () => resolve());
    });
    const address = listening.address() as AddressInfo;
    const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
    listeningUrl = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
  }

  const store = await openEventStore(config.eventStore);
  closers.push(() => store.close());
  const db = openReadModels(readModelsFile(config));
  closers.push(() => {
    db.close();
  });
  const checkpoints = new ReadModelCheckpoints(db);
  closers.push(() => checkpoints.close());
  const projector = new Projector(store, db, allProjections);
  projector.onApplied(() => checkpoints.committed());
  projector.start();
  closers.push(() => projector.stop());
  // However far behind (a projection's version changed, a large log replayed): as long as it moves.
  const head = await store.headPosition();
  starting.step("catching up the read models with the log", () => ({ position: Math.min(projector.position, head), head }));
  await projector.catchUpWhileMoving({
    onProgress: (position, logHead) => log.info({ position, head: logHead }, "catching up the read models before serving"),
  });
  starting.step("opening the bus and the sandboxes");
  const accounts = new Accounts(store, clock);
  const bootstrapKey = await bootstrap(accounts, await store.headPosition(), config);

  const sealer = loadSealer(config.secretKey, config.dataDir);
  const runtime = new IsolatedRuntime(config.runtime, {
    onReplaced: ({ reason, ...details }) => log.warn({ ...details, reason: reason.code }, `sandbox process replaced: ${reason.message}`),
  });
  closers.push(() => runtime.close());
  const nodeId = nodeIdOf(config);
  const bus = await openBus(config.bus, { file: path.join(config.dataDir, "bus.db"), clientId: `headwater-${nodeId}`, log: busLog });
  closers.push(() => bus.close());
  await bus.ensureTopics([
    { name: INVOCATIONS_TOPIC, partitions: INVOCATION_PARTITIONS },
    { name: DELIVERIES_TOPIC, partitions: DELIVERY_PARTITIONS },
    { name: WORKFLOW_RUNS_TOPIC, partitions: INVOCATION_PARTITIONS },
  ]);
  const replies = await openReplyChannel({ bus, nodeId });
  closers.push(() => replies.close());

  const publicUrl = config.publicUrl ?? listeningUrl;
  const endpointUrl = (endpointId: string) => `${config.endpointUrl ?? publicUrl}/e/${endpointId}`;
  const accountsView = new AccountsReadModel(db, projector);
  const usage = new UsageReadModel(db);
  const sources = new SourcesReadModel(db, projector);
  const componentsView = new ComponentsReadModel(db);
  const events = new EmittedEventsReadModel(db);
  const runLogs = new RunLogsReadModel(db);
  const accountsOfApps = new ConnectedAccountsReadModel(db);
  const connectedAccounts = new ConnectedAccounts(store, sealer, clock, accountsOfApps);
  const components = new ComponentCache(componentsView);
  const emitters = new EmitterStore(store, { states: PER_SOURCE_MEMO_ENTRIES });
  const runner = new SourceRunner(emitters, new RunLogStore(store), runtime, sealer, clock, (id) => connectedAccounts.sealedAuth(id));
  const catalog = new ComponentCatalog({
    store,
    runtime,
    components: componentsView,
    cache: components,
    clock,
    fetchCode: async (url) => {
      const response = await outboundRequest(
        { url, timeoutMs: 10_000, maxResponseBytes: 1024 * 1024 },
        { allowPrivateNetworks: config.runtime.allowPrivateNetworks },
      );
      if (response.status < 200 || response.status >= 300) {
        throw new DomainError("component_url_unreachable", `component_url answered HTTP ${response.status}`);
      }
      return response.body.toString("utf8");
    },
  });
  const quota = new QuotaGuard(accountsView, usage, config, clock);
  const invocations = new InvocationQueue(bus, replies);
  const runTimeoutMs = config.runtime.timeoutMs ?? DEFAULT_LIMITS.timeoutMs;
  const admission = new Admission(
    {
      sourceBacklog: config.sourceBacklog,
      ownerBacklog: config.ownerBacklog,
      ownerBacklogBytes: config.ownerBacklogBytes,
      nodeBacklog: config.nodeBacklog,
      nodeBacklogBytes: config.nodeBacklogBytes,
      forgetAfterMs: Math.max(15 * 60_000, 2 * runTimeoutMs),
    },
    quota,
    projector,
    clock,
  );
  closers.push(() => admission.close());
  const subscriptionsView = new SubscriptionsReadModel(db, projector);
  const webhooksView = new WebhooksReadModel(db, projector);
  const deliveriesView = new DeliveriesReadModel(db);
  const webhooks = new Webhooks(store, sealer, clock);
  const workflowsView = new WorkflowsReadModel(db);
  /** Who owns a source, webhook or workflow a subscription names. */
  const ownerOf = (id: string) => sources.source(id)?.ownerId ?? webhooksView.webhook(id)?.ownerId ?? workflowsView.workflow(id)?.ownerId;
  const subscriptions = new Subscriptions(store, subscriptionsView, ownerOf, clock);
  const resends = new Resends({ bus, deliveries: deliveriesView, events, runLogs, clock });
  const lifecycle = new SourceLifecycle({
    store,
    emitters,
    sources,
    runner,
    sealer,
    clock,
    rules: { minTimerSeconds: config.timerMinSeconds },
    endpointUrl,
    accounts: connectedAccounts,
    quota,
    hooksPerOwner: config.runsPerOwner,
  });
  const destinations = new Destinations(config.destinations);
  closers.push(() => destinations.close());
  const runLogStore = new RunLogStore(store);
  const actionRuns = new ManualActionRuns({
    runtime,
    sealer,
    accounts: connectedAccounts,
    destinations,
    clock,
    admission,
    appendRunLog: (logged) => runLogStore.append(logged),
    emailOf: (userId) => accountsView.user(userId)?.email || null,
  });
  const propRules = { minTimerSeconds: config.timerMinSeconds };
  const workflowService = new WorkflowService({
    store,
    catalog,
    workflows: workflowsView,
    sealer,
    clock,
    rules: propRules,
    waitFor: (position) => projector.waitFor(position),
    accounts: connectedAccounts,
  });
  const workflowRuns = new WorkflowRunQueue(bus, replies);
  // A step is an action run: run() in the sandbox, then its $.send.* (src/components/actionRunner.ts).
  const executeStep: StepExecutor = async ({ workflow, component, props, steps, tmp, keepTmp, invocationId, step, timeoutMs }) =>
    (
      await runAction(
        { runtime, destinations, clock },
        {
          component,
          props: props.values,
          additionalProps: props.added,
          steps,
          tmp,
          keepTmp,
          invocationId: `${invocationId}-${step.cellId}`,
          ownerId: workflow.creatorId,
          ownerEmail: accountsView.user(workflow.creatorId)?.email || null,
          emitterId: workflow.id,
          timeoutMs,
        },
      )
    ).outcome;
  const deps: ApiDeps = {
    settings: {
      maxBodyBytes: config.maxBodyBytes,
      endpointMaxBodyBytes: config.endpointMaxBodyBytes,
      endpointRatePerSecond: config.endpointRatePerSecond,
      endpointBurst: config.endpointBurst,
      apiRatePerSecond: config.apiRatePerSecond,
      apiBurst: config.apiBurst,
      anonymousRatePerSecond: config.anonymousRatePerSecond,
      anonymousBurst: config.anonymousBurst,
      trustProxy: config.trustProxy,
      freeDailyInvocations: config.freeDailyInvocations,
      freeDailyComputeMs: config.freeDailyComputeMs,
      sseHeartbeatMs: config.sseHeartbeatMs,
      runWaitMs: config.responseTimeoutMs ?? runTimeoutMs + 15_000,
    },
    clock,
    access: new Access(accountsView),
    accountsView,
    accounts,
    usage,
    sources,
    events,
    runLogs,
    connectedAccounts,
    connectedAccountsView: accountsOfApps,
    components,
    catalog,
    lifecycle,
    runner,
    emitters,
    admission,
    invocations,
    workflows: workflowService,
    workflowsView,
    workflowRuns,
    projector,
    subscriptions,
    subscriptionsView,
    webhooks,
    webhooksView,
    deliveriesView,
    deliveries: resends,
    destinations,
    actionRuns,
    propOptions: new PropOptions({
      runtime,
      sealer,
      accounts: connectedAccounts,
      clock,
      admission,
      appendRunLog: (logged) => runLogStore.append(logged),
      timeoutMs: Math.min(OPTIONS_TIMEOUT_MS, runTimeoutMs),
    }),
    streamTokens: new StreamTokens(sealer.derive("stream-tokens"), clock, (keyId) => accountsView.keyActive(keyId)),
    publicUrl: () => publicUrl,
    endpointUrl,
  };

  await catalog.publishRegistry((position) => projector.waitFor(position));

  let hub: SseHub | undefined;
  const metrics = new Metrics(
    {
      headPosition: () => store.headPosition(),
      projectedPosition: () => projector.position,
      parkedEvents: () => projector.parkedCount(),
      sseClients: () => hub?.size ?? 0,
      admitted: () => admission.totals(),
      partitions: partitionBacklogs,
      sandboxStarts: () => runtime.starts(),
      limits: config,
    },
    { node: nodeId, roles: config.roles },
  );
  closers.push(projector.onApplied((events) => metrics.observeLog(events)));
  const readiness = new Readiness({
    log: () => store.headPosition(),
    bus: () => bus.ensureTopics([{ name: INVOCATIONS_TOPIC, partitions: INVOCATION_PARTITIONS }]),
    projections: async () => {
      const lag = (await store.headPosition()) - projector.position;
      await projector.catchUp(2_000);
      return { lag: Math.max(0, lag) };
    },
  });
  if (roles.has("api")) {
    const sse = new SseHub(deps, config.sseHeartbeatMs);
    hub = sse;
    closers.push(() => sse.close());
    handleRequest = createApp(deps, sse, { version: VERSION, operations: { readiness, metrics, metricsToken: config.metricsToken } });
  }

  // Runs start once the public URL (endpoint URLs) is known.
  let runnerConsumer: BusConsumer | undefined;
  if (roles.has("runner")) {
    runnerConsumer = await startRunner({
      bus,
      replies,
      projector,
      sources,
      components,
      runner,
      endpointUrl,
      runsPerOwner: config.runsPerOwner,
      batchMax: config.runBatchMax,
      onBatch: (size) => metrics.observeRunBatch(size),
    });
  }
  /** The owner of a source or workflow, and the glob that names its kind. */
  const emitterOf = (id: string): { ownerId: string; glob: "dc_*" | "p_*" } | undefined => {
    if (id.startsWith("p_")) {
      const workflow = workflowsView.workflow(id);
      return workflow ? { ownerId: workflow.ownerId, glob: "p_*" } : undefined;
    }
    const source = sources.source(id);
    return source ? { ownerId: source.ownerId, glob: "dc_*" } : undefined;
  };
  let workflowConsumer: BusConsumer | undefined;
  if (roles.has("runner")) {
    const workflowRunner = new WorkflowRunner({
      emitters,
      runLogs: new RunLogStore(store),
      components,
      sealer,
      clock,
      execute: executeStep,
      runTimeoutMs,
      actionProps: (component, configured, context) =>
        actionProps({ runtime, sealer, accounts: connectedAccounts }, component, configured, context),
    });
    workflowConsumer = await startWorkflowRunner({
      bus,
      replies,
      projector,
      workflows: workflowsView,
      runner: workflowRunner,
      runsPerOwner: config.runsPerOwner,
    });
  }
  let router: Router | undefined;
  let deliveryWorker: DeliveryWorker | undefined;
  if (roles.has("dispatcher")) {
    router = new Router({
      store,
      bus,
      projector,
      subscriptions: subscriptionsView,
      nodeId,
      clock,
      emitterOf,
      listening: (id) =>
        id.startsWith("wh_")
          ? webhooksView.webhook(id)?.status === "active"
          : id.startsWith("p_")
            ? workflowsView.workflow(id)?.active === true
            : sources.source(id)?.active === true,
      errorWorkflowOf: (ownerId) => workflowsView.errorWorkflowOf(ownerId)?.id,
    });
    router.start();
    deliveryWorker = new DeliveryWorker({
      bus,
      store,
      clock,
      webhooks: webhooksView,
      webhookService: webhooks,
      deliveries: deliveriesView,
      sources,
      invocations,
      workflows: workflowsView,
      workflowRuns,
      runLogs: new RunLogStore(store),
      projectorPosition: () => projector.position,
      sweepMs: config.deliverySweepMs,
      policy: { delays: retrySchedule(config.webhookRetryMs, config.webhookRetryMaxMs), disableAfterMs: config.webhookDisableAfterMs },
      send: {
        timeoutMs: config.webhookTimeoutMs,
        allowPrivateNetworks: config.runtime.allowPrivateNetworks,
        userAgent: `Headwater-Webhooks/${VERSION}`,
      },
    });
    await deliveryWorker.start();
  }
  let scheduler: TimerScheduler | undefined;
  if (roles.has("projector")) {
    const retention = new Retention(
      store,
      projector,
      { events, runLogs },
      () => routedUpTo(store),
      (id) => {
        const emitter = emitterOf(id);
        // Unknown (deleted): nothing will route it. A workflow's errors may go to the global error workflow.
        if (!emitter) return false;
        if (subscriptionsView.hasListeners(id, emitter.ownerId, emitter.glob)) return true;
        return emitter.glob === "p_*" && workflowsView.errorWorkflowOf(emitter.ownerId) !== undefined;
      },
    );
    retention.start();
    closers.push(() => retention.stop());
  }
  if (roles.has("scheduler")) {
    scheduler = new TimerScheduler({
      timers: new TimerStore(store),
      emitters,
      sources,
      components,
      invocations,
      projector,
      quota,
      clock,
      workflows: workflowsView,
      workflowRuns,
    });
    scheduler.start();
  }

  const within = <T>(work: Promise<T>, deadline: number): Promise<T | undefined> =>
    Promise.race([
      work,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now())).unref()),
    ]);

  log.info({ nodeId, roles: config.roles, url: listeningUrl || undefined, publicUrl: publicUrl || undefined }, "node started");
  return {
    url: listeningUrl,
    publicUrl,
    bootstrapKey,
    async close(graceMs = 0) {
      const deadline = Date.now() + graceMs;
      readiness.closing();
      log.info({ graceMs }, "node stopping");
      // 1. Take nothing new: no connections, no timer ticks; live streams end so clients reconnect elsewhere.
      const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
      server?.closeIdleConnections();
      hub?.close();
      await scheduler?.stop();
      // 2. Requests in flight (custom responses wait for their runs) finish within the grace period.
      if (inFlightRequests > 0) {
        await within(new Promise<void>((resolve) => requestsDrained.add(resolve)), deadline);
      }
      // 3. Runs and deliveries in flight finish and are recorded; past the deadline they are abandoned and redone at the next start.
      await within(Promise.all([runnerConsumer?.stop(), workflowConsumer?.stop(), deliveryWorker?.stop(), router?.stop()]), deadline);
      server?.closeAllConnections();
      await closed;
      for (const close of closers.reverse()) await close();
    },
  };
}
