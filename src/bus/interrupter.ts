// A one-shot "stop waiting" signal for consumers: graceful stop interrupts retry backoffs and
// queueing, close additionally abandons running handlers. Each wait registers its own listener
// and removes it when done, so long-lived consumers do not pile up promise reactions.

export const interrupted: unique symbol = Symbol("interrupted");

export class Interrupter {
  private firedFlag = false;
  private readonly listeners = new Set<() => void>();

  get fired(): boolean {
    return this.firedFlag;
  }

  fire(): void {
    if (this.firedFlag) return;
    this.firedFlag = true;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener();
  }

  /** Calls `listener` when fired (at once if already fired); returns an unsubscribe. */
  onFire(listener: () => void): () => void {
    if (this.firedFlag) {
      listener();
      return () => {};
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The promise's outcome, or `interrupted` if this fires first. */
  guard<T>(promise: Promise<T>): Promise<T | typeof interrupted> {
    return new Promise((resolve, reject) => {
      const off = this.onFire(() => resolve(interrupted));
      promise.then(
        (value) => {
          off();
          resolve(value);
        },
        (error: unknown) => {
          off();
          reject(error);
        },
      );
    });
  }

  /** Waits `ms`; resolves true when the time passed, false when interrupted first. */
  pause(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        off();
        resolve(true);
      }, ms);
      const off = this.onFire(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
  }
}

/** At most `size` holders at once; a queued acquire can be interrupted (and leaves the queue). */
export class Slots {
  private free: number;
  private readonly queue: (() => void)[] = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`concurrency must be a positive integer, got ${size}`);
    this.free = size;
  }

  acquire(interrupter: Interrupter): Promise<boolean> {
    if (interrupter.fired) return Promise.resolve(false);
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = (): void => {
        off();
        resolve(true);
      };
      this.queue.push(grant);
      const off = interrupter.onFire(() => {
        const index = this.queue.indexOf(grant);
        if (index >= 0) this.queue.splice(index, 1);
        resolve(false);
      });
    });
  }

  release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.free++;
  }
}
