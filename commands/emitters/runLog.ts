import type { DomainEvent } from "../decider.js";

/** What triggered a run of user code. */
export type RunTrigger = "http" | "timer" | "manual" | "deploy" | "activate" | "deactivate";

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
    /** Set when the invocation was not run at all (its source was paused meanwhile): not billed. */
    skipped?: "paused";
  }
>;

export const logsStream = (sourceId: string) => `logs-${sourceId}`;
