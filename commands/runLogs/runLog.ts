import type { DomainEvent } from "../decider.js";

/** What triggered a run of user code. */
export type RunTrigger = "http" | "timer" | "manual" | "subscription" | "deploy" | "activate" | "deactivate";

export interface LogLine {
  readonly ts: number;
  readonly level: string;
  readonly message: string;
}

/**
 * One per execution of user code, in logs-<source id> (newest 100 kept): its console output,
 * start and end, outcome; also what quotas count.
 */
export type RunLogged = DomainEvent<
  "RunLogged",
  {
    sourceId: string;
    invocationId: string;
    trigger: RunTrigger;
    /** Billed user. */
    userId: string;
    startedMs: number;
    endedMs: number;
    computeMs: number;
    ok: boolean;
    error: { name: string; message: string; stack?: string } | null;
    lines: LogLine[];
    /** Set when the invocation was not run at all (its source was paused, or the event came round a cycle or too long a chain): not billed. */
    skipped?: "paused" | "cycle" | "chain";
    /**
     * The emitters the run's triggering event had passed through (source → source chains, as on
     * its EventEmitted); absent when none. Routed with the log on \$logs, so a chain of \$logs
     * subscriptions is stopped like any other.
     */
    chain?: string[];
  }
>;

/** Console lines kept per run; the runtime already truncates floods and says so. */
export const MAX_LOG_LINES = 500;

export interface RunToLog {
  readonly sourceId: string;
  readonly invocationId: string;
  readonly trigger: RunTrigger;
  readonly userId: string;
  readonly startedMs: number;
  readonly endedMs: number;
  /** Wall-clock run time: what users are billed for. */
  readonly wallMs: number;
  readonly ok: boolean;
  readonly error: { name: string; message: string; stack?: string } | null;
  readonly lines: readonly LogLine[];
  /** What the platform noticed (dedupe could not judge an emit, …). */
  readonly warnings: readonly string[];
  /** The triggering event's chain of emitters, when it came through subscriptions. */
  readonly chain?: readonly string[] | undefined;
}

/** A run's log: its start, at most MAX_LOG_LINES console lines, the platform's warnings, its error and its end. */
export function runLogged(run: RunToLog): RunLogged {
  const { endedMs, startedMs, trigger, invocationId } = run;
  const lines: LogLine[] = [
    { ts: startedMs, level: "system", message: `${trigger} run ${invocationId} started` },
    ...run.lines.slice(0, MAX_LOG_LINES),
    ...(run.lines.length > MAX_LOG_LINES
      ? [{ ts: endedMs, level: "system", message: `${run.lines.length - MAX_LOG_LINES} more log lines were dropped` }]
      : []),
    ...run.warnings.map((message) => ({ ts: endedMs, level: "warn", message })),
    ...(run.error ? [{ ts: endedMs, level: "error", message: `${run.error.name}: ${run.error.message}` }] : []),
    {
      ts: endedMs,
      level: "system",
      message: `${trigger} run ${invocationId} ended ${run.ok ? "ok" : "with an error"} in ${Math.round(run.wallMs)} ms`,
    },
  ];
  return {
    type: "RunLogged",
    data: {
      sourceId: run.sourceId,
      invocationId,
      trigger,
      userId: run.userId,
      startedMs,
      endedMs,
      computeMs: Math.round(run.wallMs),
      ok: run.ok,
      error: run.error,
      lines,
      ...chainOf(run.chain),
    },
  };
}

const SKIPPED = {
  paused: { name: "SourcePaused", message: "the source was paused when this invocation's turn came; it was not run" },
  cycle: { name: "SubscriptionCycle", message: "the event came round a cycle of subscriptions; it was not delivered again" },
  chain: { name: "SubscriptionChainTooLong", message: "the event passed through too many subscriptions; it was not delivered further" },
} as const;

function chainOf(chain: readonly string[] | undefined): { chain?: string[] } {
  return chain && chain.length > 0 ? { chain: [...chain] } : {};
}

/** The log of an invocation dropped without running: the user sees why, and it is not billed. */
export function skippedRunLogged(input: {
  sourceId: string;
  userId: string;
  invocationId: string;
  trigger: RunTrigger;
  nowMs: number;
  reason?: keyof typeof SKIPPED;
  detail?: string;
  chain?: readonly string[] | undefined;
}): RunLogged {
  const { nowMs } = input;
  const reason = input.reason ?? "paused";
  return {
    type: "RunLogged",
    data: {
      sourceId: input.sourceId,
      invocationId: input.invocationId,
      trigger: input.trigger,
      userId: input.userId,
      startedMs: nowMs,
      endedMs: nowMs,
      computeMs: 0,
      ok: false,
      error: { ...SKIPPED[reason], ...(input.detail ? { message: `${SKIPPED[reason].message}: ${input.detail}` } : {}) },
      lines: [
        {
          ts: nowMs,
          level: "system",
          message: `${input.trigger} invocation ${input.invocationId} skipped: ${input.detail ?? SKIPPED[reason].message}`,
        },
      ],
      skipped: reason,
      ...chainOf(input.chain),
    },
  };
}
