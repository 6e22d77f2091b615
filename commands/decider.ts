// The shape every aggregate follows: pure functions, no I/O; the clock and ids arrive in the command.
import type { ErrorCode } from "./errors.js";

export type DomainEvent<Type extends string = string, Data = unknown> = Readonly<{ type: Type; data: Data }>;
export type Command<Type extends string = string, Data = unknown> = Readonly<{ type: Type; data: Data }>;

/** An aggregate's fold: how its events build its state. */
export interface Evolver<State, Event extends DomainEvent> {
  readonly initialState: () => State;
  readonly evolve: (state: State, event: Event) => State;
}

/** An aggregate: its fold, and `decide`, which holds every rule: the events a command causes, or a DomainError. */
export interface Decider<C extends Command, State, Event extends DomainEvent> extends Evolver<State, Event> {
  readonly decide: (command: C, state: State) => Event[];
}

export interface ProblemDetail {
  /** Where the problem is, e.g. `configured_props.count` or `component.props.x`. */
  readonly path: string;
  readonly message: string;
}

/**
 * Why something was refused, in the domain's words: a stable code and a message (and the fields
 * at fault). No HTTP here: the API maps codes to statuses in one table, the CLI prints them.
 */
export class DomainError extends Error {
  override readonly name = "DomainError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: readonly ProblemDetail[],
    /** For refusals that pass (quotas, back-pressure): when trying again makes sense. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new DomainError("not_found", `${what} not found`);
export const invalid = (message: string, details?: readonly ProblemDetail[]) => new DomainError("invalid_request", message, details);

export function fold<State, Event extends DomainEvent>(evolver: Evolver<State, Event>, events: readonly Event[]): State {
  return events.reduce(evolver.evolve, evolver.initialState());
}
