import type { AllSubscription, RecordedEvent, SubscribeToAllOptions } from "./eventStore.js";

interface Deferred {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

// Promise.withResolvers is Node 22+.
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** Wakes waiting subscriptions when new events may have been committed. */
export class CommitSignal {
  private next = deferred();

  /** A promise settled by the next notify() after this call. Take it BEFORE reading, so no commit slips between. */
  nextCommit(): Promise<void> {
    return this.next.promise;
  }

  notify(): void {
    const current = this.next;
    this.next = deferred();
    current.resolve();
  }
}

export const defaultBatchSize = 100;

/** The largest batch a subscription hands over (and reads). */
export function batchSizeOf(options: SubscribeToAllOptions): number {
  return Math.max(1, options.batchSize ?? defaultBatchSize);
}

/**
 * A catch-up subscription to $all that becomes a live tail: reads batches after the checkpoint
 * until a read comes back short, then sleeps until the signal says something was committed.
 */
export function runAllSubscription(
  options: SubscribeToAllOptions,
  readAll: (fromPosition: number, maxCount: number) => Promise<RecordedEvent[]> | RecordedEvent[],
  signal: CommitSignal,
  onStopped: (subscription: AllSubscription) => void,
): AllSubscription {
  const batchSize = batchSizeOf(options);
  const stopRequested = deferred();
  let stopped = false;
  let checkpoint = options.fromPosition;

  const run = async (): Promise<void> => {
    while (!stopped) {
      const committed = signal.nextCommit();
      const events = await readAll(checkpoint, batchSize);
      if (stopped) return;
      if (events.length > 0) {
        await options.onEvents(events);
        checkpoint = events[events.length - 1].position;
      }
      if (events.length < batchSize) await Promise.race([committed, stopRequested.promise]);
      // Catching up: timers and I/O get a turn between batches. A read that answers at once (the
      // SQLite file, a page read ahead) and a synchronous handler would otherwise chain every
      // batch of a long catch-up in microtasks, with nothing else on the event loop running
      // until the head: the read models' checkpoints, for one, did not run during a rebuild.
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };

  const subscription: AllSubscription = {
    // Awaiting stop() from inside onEvents would wait for itself: call it without await there.
    async stop() {
      stopped = true;
      stopRequested.resolve();
      await running;
    },
  };
  const running = run().then(
    () => onStopped(subscription),
    (error: unknown) => {
      stopped = true;
      onStopped(subscription);
      // Without onError the failure surfaces as an unhandled rejection rather than vanishing.
      if (options.onError) options.onError(error);
      else void Promise.reject(error);
    },
  );
  return subscription;
}
