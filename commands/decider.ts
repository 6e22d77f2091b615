// The decider shape every command follows: pure functions, no I/O; clock and ids arrive in the command.

export type DomainEvent<Type extends string = string, Data = unknown> = Readonly<{ type: Type; data: Data }>;

/** An aggregate's fold: how its events build its state. One per aggregate (users/user.ts, …). */
export interface Evolver<State, Event extends DomainEvent> {
  readonly initialState: () => State;
  readonly evolve: (state: State, event: Event) => State;
}

/** A command's decision: given current state, the events it causes (or a thrown CommandRejected). */
export type Decide<Command, State, Event extends DomainEvent> = (command: Command, state: State) => Event[];

/** Why a command was refused; the API maps `status` and `code` onto its error body. */
export class CommandRejected extends Error {
  override readonly name = "CommandRejected";
  constructor(
    readonly code: string,
    message: string,
    readonly status: 400 | 403 | 404 | 409 | 422 = 400,
  ) {
    super(message);
  }
}

export function fold<State, Event extends DomainEvent>(evolver: Evolver<State, Event>, events: readonly Event[]): State {
  return events.reduce(evolver.evolve, evolver.initialState());
}
