// Prometheus metrics of a node (prom-client, one registry per node). Requests are counted where
// they are answered (this node); runs and webhook deliveries are counted from the log as this
// node projects it, so every node reports the same cluster-wide totals (take max, not sum, across
// nodes); gauges are read at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { RecordedEvent } from "../store/eventStore.js";
import type { PartitionBacklog } from "../bus/keyedDispatcher.js";
import type { RunLogged } from "../../commands/runLogs/runLog.js";
import type { DeliveryAttempted, DeliveryDropped } from "../../commands/deliveries/delivery.js";

/** One answered request, as the access log sees it. */
export interface FinishedRequest {
  readonly method: string;
  /** The route's template (`/v1/sources/{id}`), never the raw path: bounded label values. */
  readonly route: string;
  readonly status: number;
  readonly seconds: number;
}

/** What the gauges read at scrape time. */
export interface NodeGauges {
  /** The log's head position (may reject: the log is unreachable). */
  headPosition(): Promise<number>;
  /** The position every read model has applied. */
  projectedPosition(): number;
  /** Events a read model could not apply and set aside (projection_parked). */
  parkedEvents(): number;
  /** Open SSE streams on this node (0 without the api role). */
  sseClients(): number;
  /** Invocations admitted by this node and not yet recorded, with their bytes. */
  admitted(): { readonly count: number; readonly bytes: number; readonly sources: number; readonly owners: number };
  /** Each bus partition this node consumes, with the records read and not yet committed past, and the group's lag. */
  partitions(): readonly PartitionBacklog[];
  /** Runs of this node's sandbox children, by whether the source's context was warm or made anew (a cold start). */
  sandboxStarts(): { readonly warm: number; readonly cold: number };
  /** The admission bounds, to read the backlog against. */
  readonly limits: {
    readonly sourceBacklog: number;
    readonly ownerBacklog: number;
    readonly nodeBacklog: number;
    readonly nodeBacklogBytes: number;
  };
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<"method" | "route" | "status">;
  readonly #requestSeconds: Histogram<"method" | "route">;
  readonly #runs: Counter<"trigger" | "outcome">;
  readonly #runSeconds: Histogram<"trigger">;
  readonly #deliveries: Counter<"outcome">;
  readonly #runBatch: Histogram;

  constructor(gauges: NodeGauges, labels: { node: string; roles: readonly string[] }) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ node: labels.node });
    // The standard process_* and nodejs_* names, so stock Node.js dashboards work.
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: "headwater_node_info",
      help: "1 for this node; its roles as labels",
      labelNames: ["roles"],
      registers,
      collect() {
        this.set({ roles: labels.roles.join(",") }, 1);
      },
    });
    this.#requests = new Counter({
      name: "headwater_http_requests_total",
      help: "HTTP requests answered by this node, by route template and status",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.#requestSeconds = new Histogram({
      name: "headwater_http_request_duration_seconds",
      help: "Time to answer an HTTP request (for SSE streams: how long the stream stayed open)",
      labelNames: ["method", "route"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#runs = new Counter({
      name: "headwater_runs_total",
      help: "Runs of user code recorded in the log (cluster-wide), by trigger and outcome (ok, error, skipped)",
      labelNames: ["trigger", "outcome"],
      registers,
    });
    this.#runSeconds = new Histogram({
      name: "headwater_run_duration_seconds",
      help: "Wall-clock time of recorded runs (cluster-wide), by trigger",
      labelNames: ["trigger"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#runBatch = new Histogram({
      name: "headwater_run_batch_size",
      help: "Invocations of one source run by this node with one sandbox entry and recorded with one append",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    });
    this.#deliveries = new Counter({
      name: "headwater_webhook_deliveries_total",
      help: "Webhook delivery attempts recorded in the log (cluster-wide), by outcome (delivered, http_error, failed, dropped)",
      labelNames: ["outcome"],
      registers,
    });
    new Counter({
      name: "headwater_sandbox_runs_total",
      help: "Runs in this node's sandbox children, by start: warm (the source's context was kept) or cold (made anew: a context, the prelude and the component)",
      labelNames: ["start"],
      registers,
      collect() {
        const starts = gauges.sandboxStarts();
        this.reset();
        this.inc({ start: "warm" }, starts.warm);
        this.inc({ start: "cold" }, starts.cold);
      },
    });
    new Gauge({
      name: "headwater_log_head_position",
      help: "The log's head position (the newest event's $all position)",
      registers,
      async collect() {
        this.set(await gauges.headPosition().catch(() => Number.NaN));
      },
    });
    new Gauge({
      name: "headwater_projection_position",
      help: "The log position every read model of this node has applied",
      registers,
      collect() {
        this.set(gauges.projectedPosition());
      },
    });
    new Gauge({
      name: "headwater_projection_parked_events",
      help: "Events a read model of this node could not apply and set aside so the others went on (headwater projections parked lists them)",
      registers,
      collect() {
        this.set(gauges.parkedEvents());
      },
    });
    new Gauge({
      name: "headwater_projection_lag",
      help: "Log positions not yet applied to this node's read models (events for SQLite and PostgreSQL logs; NaN when the log is unreachable)",
      registers,
      async collect() {
        const head = await gauges.headPosition().catch(() => Number.NaN);
        this.set(Math.max(0, head - gauges.projectedPosition()));
      },
    });
    new Gauge({
      name: "headwater_sse_clients",
      help: "Open server-sent-event streams on this node",
      registers,
      collect() {
        this.set(gauges.sseClients());
      },
    });
    new Gauge({
      name: "headwater_backlog_invocations",
      help: "Invocations admitted by this node and not yet recorded (the node admission bound's count)",
      registers,
      collect() {
        this.set(gauges.admitted().count);
      },
    });
    new Gauge({
      name: "headwater_backlog_bytes",
      help: "Bytes of queued events admitted by this node and not yet recorded",
      registers,
      collect() {
        this.set(gauges.admitted().bytes);
      },
    });
    new Gauge({
      name: "headwater_backlog_sources",
      help: "Sources and billed users with invocations waiting on this node",
      labelNames: ["of"],
      registers,
      collect() {
        const admitted = gauges.admitted();
        this.set({ of: "sources" }, admitted.sources);
        this.set({ of: "owners" }, admitted.owners);
      },
    });
    /** A gauge per bus partition this node consumes, of one figure of its backlog (none when unknown). */
    const partitionGauge = (name: string, help: string, figure: (p: PartitionBacklog) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ["group", "topic", "partition"],
        registers,
        collect() {
          this.reset();
          for (const p of gauges.partitions()) {
            const value = figure(p);
            if (value !== undefined) this.set({ group: p.groupId, topic: p.topic, partition: String(p.partition) }, value);
          }
        },
      });
    partitionGauge(
      "headwater_bus_partition_backlog_records",
      "Records of a bus partition this node consumes, read and not yet committed past (waiting or running)",
      (p) => p.records,
    );
    partitionGauge(
      "headwater_bus_partition_backlog_bytes",
      "Bytes of the records counted by headwater_bus_partition_backlog_records",
      (p) => p.bytes,
    );
    partitionGauge(
      "headwater_bus_partition_lag_records",
      "Consumer lag of a bus partition this node consumes: records between the group's committed offset and the end of the partition, fetched or not",
      (p) => p.lag,
    );
    new Gauge({
      name: "headwater_backlog_limit",
      help: "Admission bounds: past them a source or user gets 429 backlog_full, the node 503 overloaded",
      labelNames: ["bound"],
      registers,
      collect() {
        const { limits } = gauges;
        this.set({ bound: "source" }, limits.sourceBacklog);
        this.set({ bound: "owner" }, limits.ownerBacklog);
        this.set({ bound: "node" }, limits.nodeBacklog);
        this.set({ bound: "node_bytes" }, limits.nodeBacklogBytes);
      },
    });
  }

  observeRequest(request: FinishedRequest): void {
    this.#requests.inc({ method: request.method, route: request.route, status: String(request.status) });
    this.#requestSeconds.observe({ method: request.method, route: request.route }, request.seconds);
  }

  /** Counts runs and deliveries from events this node has just projected. */
  observeRunBatch(size: number): void {
    this.#runBatch.observe(size);
  }

  observeLog(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      if (event.type === "RunLogged") {
        const run = event.data as RunLogged["data"];
        const outcome = run.skipped ? "skipped" : run.ok ? "ok" : "error";
        this.#runs.inc({ trigger: run.trigger, outcome });
        if (!run.skipped) this.#runSeconds.observe({ trigger: run.trigger }, Math.max(0, run.endedMs - run.startedMs) / 1000);
      } else if (event.type === "DeliveryAttempted") {
        const attempt = event.data as DeliveryAttempted["data"];
        if (!attempt.listenerId.startsWith("wh_")) continue; // a listening source: counted as its run
        this.#deliveries.inc({ outcome: attempt.ok ? "delivered" : attempt.status ? "http_error" : "failed" });
      } else if (event.type === "DeliveryDropped") {
        if (!(event.data as DeliveryDropped["data"]).listenerId.startsWith("wh_")) continue;
        this.#deliveries.inc({ outcome: "dropped" });
      }
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
