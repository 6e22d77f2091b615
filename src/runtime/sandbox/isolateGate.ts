// Admission of calls into isolates, so that no more of them execute at once than isolated-vm has
// threads for. An async call into an isolate (apply, run, compileScript, createContext) is a task
// on one of isolated-vm's pool threads: hardware threads + 1 per process. When every pool thread
// is busy, isolated-vm starts a thread of its own for the task and lets it end afterwards. A
// runner child with dozens of invocations under way (each in another isolate) made hundreds of
// such threads a second; making and ending them was mostly kernel work (with the gate the
// children's kernel time per run fell by 28 %, bench/results/many-sources.md).
//
// The gate cannot see when an isolate's task ends, only when the call settles: a run that awaits
// the host (an HTTP request, a timer) has a call that stays open while its isolate is idle. The
// slot releases such a run's pass when the isolate asks the host for that work; any other call
// stops counting after EXECUTING_GRACE_MS (it computes for long, or awaits a promise nothing
// settles), so a pass never blocks the gate for longer than that.
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";

/**
 * Calls executing at once: one fewer than isolated-vm's pool (`hardware_concurrency() + 1` threads
 * per process). A pool thread that has handed back its call's result is still busy for a moment,
 * and a call let in at the pool's full size would often meet it busy and get a thread of its own
 * (measured: ~130 new threads in 960 runs, against ~5 with one thread spare).
 */
export const EXECUTING_CALLS = availableParallelism();
/** How long an unsettled call counts as executing. */
export const EXECUTING_GRACE_MS = 20;

/** A call's place in the gate; `release()` may be called early and more than once. */
export interface IsolatePass {
  release(): void;
}

class Pass implements IsolatePass {
  released = false;
  constructor(
    private readonly gate: IsolateCallGate,
    readonly since: number,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.gate.left(this);
  }
}

export class IsolateCallGate {
  /** Passes counting as executing, in the order they were given (so the oldest is first). */
  private readonly executing = new Set<Pass>();
  private readonly waiting: ((pass: Pass) => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly capacity: number = EXECUTING_CALLS,
    readonly graceMs: number = EXECUTING_GRACE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Calls executing now (as the gate counts them) and calls waiting for a pass. */
  get load(): { executing: number; waiting: number } {
    this.expire();
    return { executing: this.executing.size, waiting: this.waiting.length };
  }

  /**
   * Runs `call` once fewer than `capacity` calls execute, in the order calls arrive. The pass is
   * released when the call settles, or earlier by the caller (`pass.release()`).
   */
  async enter<T>(call: (pass: IsolatePass) => Promise<T>): Promise<T> {
    const pass = this.admit() ?? (await new Promise<Pass>((resolve) => this.wait(resolve)));
    try {
      return await call(pass);
    } finally {
      pass.release();
    }
  }

  /** @internal A pass was released. */
  left(pass: Pass): void {
    if (this.executing.delete(pass)) this.next();
  }

  private admit(): Pass | undefined {
    this.expire();
    if (this.waiting.length > 0 || this.executing.size >= this.capacity) return undefined;
    const pass = new Pass(this, this.now());
    this.executing.add(pass);
    return pass;
  }

  private wait(resolve: (pass: Pass) => void): void {
    this.waiting.push(resolve);
    this.next();
  }

  /** Passes older than the grace stop counting (the oldest come first). */
  private expire(): void {
    const limit = this.now() - this.graceMs;
    for (const pass of this.executing) {
      if (pass.since > limit) break;
      this.executing.delete(pass);
    }
  }

  private next(): void {
    this.expire();
    while (this.waiting.length > 0 && this.executing.size < this.capacity) {
      const pass = new Pass(this, this.now());
      this.executing.add(pass);
      this.waiting.shift()!(pass);
    }
    if (this.waiting.length === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    } else this.arm();
  }

  /** While calls wait, wakes the gate when its oldest pass stops counting. */
  private arm(): void {
    if (this.timer || this.waiting.length === 0) return;
    const oldest = this.executing.values().next().value;
    const delay = oldest ? Math.max(1, Math.ceil(oldest.since + this.graceMs - this.now())) : 0;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.next();
    }, delay);
    this.timer.unref();
  }
}
