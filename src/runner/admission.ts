import type { Projector } from "../projector/projector.js";
import type { QuotaGuard } from "../sources/quota.js";
import type { Clock } from "../ids.js";
import type { RunLogged } from "../../commands/runLogs/runLog.js";
import type { SourceDeleted } from "../../commands/sources/source.js";
import { DomainError } from "../../commands/decider.js";

/** How much queued work this node admits before it pushes back (README: "Back-pressure"). */
export interface AdmissionLimits {
  /** Invocations queued and not yet recorded, per source (429 past it). */
  readonly sourceBacklog: number;
  /** The same per billed user, in invocations and in bytes of queued events (429 past it). */
  readonly ownerBacklog: number;
  readonly ownerBacklogBytes: number;
  /** The same for the whole node (503 past it: the node is overloaded, not the caller). */
  readonly nodeBacklog: number;
  readonly nodeBacklogBytes: number;
  /** An entry whose run was never seen recorded is forgotten after this long (a leak guard, not a rule). */
  readonly forgetAfterMs: number;
}

interface Pending {
  readonly sourceId: string;
  readonly ownerId: string;
  readonly bytes: number;
  readonly at: number;
}

interface Tally {
  count: number;
  bytes: number;
}

/**
 * Admission of queued invocations (endpoint requests, manual runs): every one is counted from the
 * moment it is queued until its run is recorded (RunLogged, on this node's projector tail, from
 * whichever node ran it), so quotas count runs in flight and a source, a user or the node that
 * is too far behind is refused with 429/503 and Retry-After instead of queueing forever.
 */
export class Admission {
  readonly #pending = new Map<string, Pending>();
  readonly #bySource = new Map<string, Tally>();
  readonly #byOwner = new Map<string, Tally>();
  readonly #node: Tally = { count: 0, bytes: 0 };
  readonly #sweep: NodeJS.Timeout;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly quota: QuotaGuard,
    projector: Projector,
    private readonly clock: Clock,
  ) {
    this.#unsubscribe = projector.onApplied((events) => {
      for (const event of events) {
        if (event.type === "RunLogged") this.release((event.data as RunLogged["data"]).invocationId);
        else if (event.type === "SourceDeleted" || event.type === "WorkflowDeleted")
          this.#releaseSource((event.data as SourceDeleted["data"]).id);
      }
    });
    this.#sweep = setInterval(() => this.#forgetOld(), 60_000);
    this.#sweep.unref();
  }

  /** Counts the invocation in, or throws the 429/503 (quota, backlog) the caller answers. */
  admit(input: { invocationId: string; sourceId: string; ownerId: string; bytes: number }): void {
    const source = this.#bySource.get(input.sourceId);
    const owner = this.#byOwner.get(input.ownerId);
    this.quota.check(input.ownerId, owner?.count ?? 0);
    if ((source?.count ?? 0) >= this.limits.sourceBacklog) {
      throw refused("backlog_full", `this source has ${this.limits.sourceBacklog} invocations waiting to run`);
    }
    if ((owner?.count ?? 0) >= this.limits.ownerBacklog || (owner?.bytes ?? 0) + input.bytes > this.limits.ownerBacklogBytes) {
      throw refused("backlog_full", "this account has too many invocations waiting to run");
    }
    if (this.#node.count >= this.limits.nodeBacklog || this.#node.bytes + input.bytes > this.limits.nodeBacklogBytes) {
      throw refused("overloaded", "this node has too many invocations waiting to run");
    }
    this.#pending.set(input.invocationId, { sourceId: input.sourceId, ownerId: input.ownerId, bytes: input.bytes, at: this.clock.now() });
    add(this.#bySource, input.sourceId, 1, input.bytes);
    add(this.#byOwner, input.ownerId, 1, input.bytes);
    this.#node.count++;
    this.#node.bytes += input.bytes;
  }

  /** The run was recorded (or never queued): its slot is free. */
  release(invocationId: string): void {
    const pending = this.#pending.get(invocationId);
    if (!pending) return;
    this.#pending.delete(invocationId);
    add(this.#bySource, pending.sourceId, -1, -pending.bytes);
    add(this.#byOwner, pending.ownerId, -1, -pending.bytes);
    this.#node.count--;
    this.#node.bytes -= pending.bytes;
  }

  /** Waits for an admitted invocation's submission; one that could not be queued frees its slot. */
  async during<T>(invocationId: string, submit: Promise<T>): Promise<T> {
    try {
      return await submit;
    } catch (error) {
      this.release(invocationId);
      throw error;
    }
  }

  /** Invocations admitted here and not yet recorded, for a source (metrics, tests). */
  waiting(sourceId?: string): number {
    return sourceId === undefined ? this.#node.count : (this.#bySource.get(sourceId)?.count ?? 0);
  }

  /** The node bound's tally, and how many sources and billed users have work waiting (metrics). */
  totals(): { count: number; bytes: number; sources: number; owners: number } {
    return { count: this.#node.count, bytes: this.#node.bytes, sources: this.#bySource.size, owners: this.#byOwner.size };
  }

  close(): void {
    clearInterval(this.#sweep);
    this.#unsubscribe();
  }

  #releaseSource(sourceId: string): void {
    for (const [id, pending] of this.#pending) if (pending.sourceId === sourceId) this.release(id);
  }

  #forgetOld(): void {
    const before = this.clock.now() - this.limits.forgetAfterMs;
    for (const [id, pending] of this.#pending) if (pending.at < before) this.release(id);
  }
}

function add(tallies: Map<string, Tally>, key: string, count: number, bytes: number): void {
  const tally = tallies.get(key) ?? { count: 0, bytes: 0 };
  tally.count += count;
  tally.bytes += bytes;
  if (tally.count <= 0) tallies.delete(key);
  else tallies.set(key, tally);
}

/** backlog_full is the caller's own backlog (429); overloaded is the node's (503). */
const refused = (code: "backlog_full" | "overloaded", message: string) =>
  new DomainError(code, `${message}; try again shortly`, undefined, 1);
