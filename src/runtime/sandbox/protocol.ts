// Messages between the supervisor (host process) and a runner child process.
import type { SandboxLimits } from "../config.js";
import type { Emit, HttpResponse, InvocationError, InvocationMethod, LogLine } from "../types.js";

export interface WorkerInit {
  type: "init";
  prelude: string;
  limits: SandboxLimits;
  allowPrivateNetworks: boolean;
  maxWarmIsolates: number;
}

export interface InvokeRequest {
  type: "invoke";
  id: number;
  /** Isolate tenancy key parts: never shared across owners, one warm context per source. */
  ownerId: string;
  sourceId: string;
  bundleKey: string;
  /** Present when the host believes the child does not hold this bundle yet. */
  bundle?: string;
  method: InvocationMethod;
  /** JSON payload for the isolate (props, event, db, http, steps). */
  payload: string;
  timeoutMs: number;
  memoryMb: number;
}

export interface DescribeRequest {
  type: "describe";
  id: number;
  bundle: string;
  timeoutMs: number;
  memoryMb: number;
}

export type HostToWorker = WorkerInit | InvokeRequest | DescribeRequest | { type: "ping"; seq: number } | { type: "shutdown" };

export interface WorkerOutcome {
  ok: boolean;
  error?: InvocationError;
  emits: Emit[];
  db?: Record<string, unknown>;
  dbChanged: boolean;
  returnValue?: unknown;
  exports?: Record<string, unknown>;
  exited?: { reason?: string };
  droppedLogLines: number;
  cpuMs: number;
  wallMs: number;
  warm: boolean;
}

export type WorkerToHost =
  | { type: "ready" }
  | { type: "pong"; seq: number }
  | { type: "logs"; id: number; lines: LogLine[] }
  | { type: "respond"; id: number; response: HttpResponse }
  | { type: "need-bundle"; id: number }
  | { type: "result"; id: number; outcome: WorkerOutcome }
  | { type: "described"; id: number; result: DescribeResult };

export type DescribeResult =
  | { ok: true; describe: unknown; logs: LogLine[] }
  | { ok: false; error: InvocationError; logs: LogLine[] };
