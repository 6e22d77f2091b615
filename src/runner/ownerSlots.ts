/**
 * At most `perOwner` sources of one billed user run at once on this node; the others wait their
 * turn, first come first served, while other users' sources go on. This is what bounds how much of
 * a node one tenant's hanging or flooding sources can hold (README: "Fair scheduling").
 */
export class OwnerSlots {
  readonly #running = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(private readonly perOwner: number) {}

  async acquire(owner: string): Promise<void> {
    const running = this.#running.get(owner) ?? 0;
    if (running < this.perOwner) {
      this.#running.set(owner, running + 1);
      return;
    }
    await new Promise<void>((resolve) => {
      const queue = this.#waiting.get(owner) ?? [];
      queue.push(resolve);
      this.#waiting.set(owner, queue);
    });
  }

  release(owner: string): void {
    const queue = this.#waiting.get(owner);
    const next = queue?.shift();
    if (queue?.length === 0) this.#waiting.delete(owner);
    // The slot passes straight to the next waiter of the same owner.
    if (next) return next();
    const running = (this.#running.get(owner) ?? 1) - 1;
    if (running <= 0) this.#running.delete(owner);
    else this.#running.set(owner, running);
  }

  /** Sources of the owner running now (metrics, tests). */
  running(owner: string): number {
    return this.#running.get(owner) ?? 0;
  }
}
