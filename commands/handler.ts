import type { EventStore, NewEvent } from "../src/store/eventStore.js";
import { WrongExpectedRevisionError } from "../src/store/eventStore.js";
import type { Decide, DomainEvent, Evolver } from "./decider.js";

export interface Handled<Event extends DomainEvent> {
  readonly events: Event[];
  /** Global position of the last appended event; undefined when the command changed nothing. */
  readonly position: number | undefined;
}

export interface HandleOptions {
  /** Metadata stored with every appended event (who asked, correlation). */
  readonly metadata?: Record<string, unknown>;
  /** Conflicts retried before giving up; each retry re-reads the stream. */
  readonly maxRetries?: number;
}

/**
 * Reads the stream, folds it, decides, appends with the expected revision; a concurrent
 * writer makes the append fail with a conflict, and the command is decided again on fresh state.
 */
export async function handleCommand<Command, State, Event extends DomainEvent>(
  store: EventStore,
  stream: string,
  evolver: Evolver<State, Event>,
  decide: Decide<Command, State, Event>,
  command: Command,
  options: HandleOptions = {},
): Promise<Handled<Event>> {
  const maxRetries = options.maxRetries ?? 10;
  for (let attempt = 0; ; attempt++) {
    const recorded = await store.readStream(stream);
    const state = recorded.reduce((s, e) => evolver.evolve(s, { type: e.type, data: e.data } as Event), evolver.initialState());
    const events = decide(command, state);
    if (events.length === 0) return { events, position: undefined };
    // Command streams are never truncated, so the last read event carries the stream's revision.
    const expectedRevision = recorded.length === 0 ? "no_stream" : recorded[recorded.length - 1]!.revision;
    const toAppend: NewEvent[] = events.map((e) => ({ type: e.type, data: e.data, metadata: options.metadata ?? {} }));
    try {
      const result = await store.append(stream, toAppend, { expectedRevision });
      return { events, position: result.position };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < maxRetries) continue;
      throw error;
    }
  }
}
