// Per-invocation budgets inside the isolate (logs, emits, respond). Reset by every invocation.

export interface IsolateLimits {
  maxEmitBytes: number;
  maxEmitsPerRun: number;
  maxLogBytes: number;
  maxLogLines: number;
  maxLogLineChars: number;
  maxDbBytes: number;
  maxResponseBytes: number;
}

export interface InvocationState {
  limits: IsolateLimits;
  logLines: number;
  logBytes: number;
  droppedLogLines: number;
  emits: number;
  sends: number;
  responded: boolean;
  /** An emit's meta.ts was dropped and the run's log says so (once per run). */
  warnedTs: boolean;
}

export const LOAD_LIMITS: IsolateLimits = {
  maxEmitBytes: 512 * 1024,
  maxEmitsPerRun: 1000,
  maxLogBytes: 64 * 1024,
  maxLogLines: 200,
  maxLogLineChars: 16 * 1024,
  maxDbBytes: 60 * 1024,
  maxResponseBytes: 6 * 1024 * 1024,
};

let state: InvocationState = fresh(LOAD_LIMITS);

function fresh(limits: IsolateLimits): InvocationState {
  return { limits, logLines: 0, logBytes: 0, droppedLogLines: 0, emits: 0, sends: 0, responded: false, warnedTs: false };
}

export function beginInvocation(limits: IsolateLimits): InvocationState {
  state = fresh(limits);
  return state;
}

export function current(): InvocationState {
  return state;
}
