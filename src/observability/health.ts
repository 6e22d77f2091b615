// Readiness: can this node do its work now? The log answers, the bus answers, and the read
// models have applied everything the log held when asked. One check runs at a time and its answer
// is reused for a second, so probes and floods of /readyz cost the log and the bus nothing extra.

export interface ReadinessProbes {
  /** Resolves when the log answers (e.g. reads its head position). */
  log(): Promise<unknown>;
  /** Resolves when the bus answers (e.g. lists its topics). */
  bus(): Promise<unknown>;
  /** Resolves once the read models include the log's current head; returns how far behind they were. */
  projections(): Promise<{ lag: number }>;
}

export interface CheckResult {
  readonly ok: boolean;
  readonly ms: number;
  readonly error?: string;
  readonly lag?: number;
}

export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: { readonly log: CheckResult; readonly bus: CheckResult; readonly projections: CheckResult };
  readonly closing?: true;
}

const within = <T>(work: () => Promise<T>, timeoutMs: number): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    work().then(
      (value) => (clearTimeout(timer), resolve(value)),
      (error: unknown) => (clearTimeout(timer), reject(error instanceof Error ? error : new Error(String(error)))),
    );
  });

async function check(work: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  const started = Date.now();
  try {
    const value = await within(work, timeoutMs);
    const lag = value !== null && typeof value === "object" && "lag" in value ? Number(value.lag) : undefined;
    return { ok: true, ms: Date.now() - started, ...(lag !== undefined ? { lag } : {}) };
  } catch (error) {
    return { ok: false, ms: Date.now() - started, error: (error as Error).message };
  }
}

export class Readiness {
  #closing = false;
  #inFlight: Promise<ReadinessReport> | undefined;
  #last: { at: number; report: ReadinessReport } | undefined;

  constructor(
    private readonly probes: ReadinessProbes,
    private readonly options: { timeoutMs: number; reuseMs: number } = { timeoutMs: 2_000, reuseMs: 1_000 },
  ) {}

  /** Shutting down: not ready any more, so load balancers stop sending new work. */
  closing(): void {
    this.#closing = true;
  }

  async report(): Promise<ReadinessReport> {
    if (this.#last && Date.now() - this.#last.at < this.options.reuseMs) return this.#withClosing(this.#last.report);
    this.#inFlight ??= this.#run().finally(() => (this.#inFlight = undefined));
    return this.#withClosing(await this.#inFlight);
  }

  async #run(): Promise<ReadinessReport> {
    const { timeoutMs } = this.options;
    const [log, bus, projections] = await Promise.all([
      check(() => this.probes.log(), timeoutMs),
      check(() => this.probes.bus(), timeoutMs),
      check(() => this.probes.projections(), timeoutMs),
    ]);
    const report: ReadinessReport = { ready: log.ok && bus.ok && projections.ok, checks: { log, bus, projections } };
    this.#last = { at: Date.now(), report };
    return report;
  }

  #withClosing(report: ReadinessReport): ReadinessReport {
    return this.#closing ? { ...report, ready: false, closing: true } : report;
  }
}
