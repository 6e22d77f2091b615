// Every append of the application goes through here: read the aggregate, decide, append at the
// revision that was read; another writer in between makes the append fail with a conflict, and the
// command is decided again on fresh state. One retry loop for every aggregate.
import { WrongExpectedRevisionError, type EventStore, type ExpectedRevision, type NewEvent } from "../src/store/eventStore.js";
import { fold, type Command, type Decider, type DomainEvent } from "./decider.js";

export interface HandleOptions {
  /** Metadata stored with every appended event (who asked, correlation). */
  readonly metadata?: Record<string, unknown>;
  /** Conflicts retried before giving up; each retry reads again. */
  readonly maxRetries?: number;
}

/** Where a decision goes: a stream, at the revision the decision was made on. */
export interface Decision<Event extends DomainEvent> {
  readonly stream: string;
  readonly events: readonly Event[];
  readonly expectedRevision: ExpectedRevision;
}

export interface Appended<Event extends DomainEvent> {
  readonly events: readonly Event[];
  /** Global position of the last appended event; undefined when nothing was appended. */
  readonly position: number | undefined;
  /** The stream's revision after the append. */
  readonly revision: number | undefined;
}

/**
 * The retry loop: `read` the state, `decide` on it (undefined: nothing to append), append; on a
 * revision conflict, read and decide again (at most maxRetries times).
 */
export async function decideAndAppend<State, Event extends DomainEvent>(
  store: EventStore,
  read: () => Promise<State>,
  decide: (state: State, attempt: number) => Decision<Event> | undefined,
  options: HandleOptions = {},
): Promise<Appended<Event>> {
  const maxRetries = options.maxRetries ?? 10;
  for (let attempt = 0; ; attempt++) {
    const decision = decide(await read(), attempt);
    if (!decision || decision.events.length === 0) return { events: [], position: undefined, revision: undefined };
    const toAppend: NewEvent[] = decision.events.map((e) => ({ type: e.type, data: e.data, metadata: options.metadata ?? {} }));
    try {
      const result = await store.append(decision.stream, toAppend, { expectedRevision: decision.expectedRevision });
      return { events: decision.events, position: result.position, revision: result.nextExpectedRevision };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < maxRetries) continue;
      throw error;
    }
  }
}

/** The state of one stream's aggregate and the revision it was read at. */
export interface Loaded<State> {
  readonly state: State;
  readonly revision: number | undefined;
}

/** The handler of an aggregate kept in one stream per id (users, orgs, sources, …). */
export class CommandHandler<C extends Command, State, Event extends DomainEvent> {
  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<C, State, Event>,
    private readonly streamOf: (id: string) => string,
  ) {}

  /** Folds the aggregate's stream (command streams are never truncated: the last event carries the revision). */
  async load(id: string): Promise<Loaded<State>> {
    const recorded = await this.store.readStream(this.streamOf(id));
    const events = recorded.map((e) => ({ type: e.type, data: e.data }) as Event);
    return { state: fold(this.decider, events), revision: recorded.at(-1)?.revision };
  }

  handle(id: string, command: C, options: HandleOptions = {}): Promise<Appended<Event>> {
    const stream = this.streamOf(id);
    return decideAndAppend(
      this.store,
      () => this.load(id),
      ({ state, revision }) => ({ stream, events: this.decider.decide(command, state), expectedRevision: revision ?? "no_stream" }),
      options,
    );
  }
}

/** The latest of several positions (undefined ones ignored): what a caller awaits for read-your-writes. */
export const latestPosition = (...positions: (number | undefined)[]): number | undefined =>
  positions.reduce<number | undefined>((a, b) => (b === undefined ? a : Math.max(a ?? 0, b)), undefined);

/** The handler type of a decider, for fields: `HandlerOf<typeof user>`. */
export type HandlerOf<D> = D extends Decider<infer C, infer State, infer Event> ? CommandHandler<C, State, Event> : never;
