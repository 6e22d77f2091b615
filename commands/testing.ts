// Given/when/then for deciders: given past events, when a command, then these events (or this rejection).
import { expect } from "chai";
import { CommandRejected, fold, type Decide, type DomainEvent, type Evolver } from "./decider.js";

export function given<State, Event extends DomainEvent>(evolver: Evolver<State, Event>, ...history: NoInfer<Event>[]) {
  return {
    when<Command>(decide: Decide<Command, State, Event>, command: Command) {
      const run = () => decide(command, fold(evolver, history));
      return {
        then(expected: NoInfer<Event>[]): void {
          expect(run()).to.deep.equal(expected);
        },
        thenRejected(code: string, status?: number): void {
          let caught: unknown;
          try {
            run();
          } catch (error) {
            caught = error;
          }
          expect(caught, "the command should have been rejected").to.be.instanceOf(CommandRejected);
          expect((caught as CommandRejected).code).to.equal(code);
          if (status !== undefined) expect((caught as CommandRejected).status).to.equal(status);
        },
      };
    },
  };
}
