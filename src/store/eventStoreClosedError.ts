/** A call on a store after close(). */
export class EventStoreClosedError extends Error {
  override readonly name = "EventStoreClosedError";
  constructor() {
    super("the event store is closed");
  }
}
