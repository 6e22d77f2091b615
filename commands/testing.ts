// Given/when/then for deciders: given past events, when a command, then these events (or this rejection).
import { expect } from "chai";
import { DomainError, fold, type Command, type Decider, type DomainEvent } from "./decider.js";
import type { ErrorCode } from "./errors.js";

export function given<C extends Command, State, Event extends DomainEvent>(
  decider: Decider<C, State, Event>,
  ...history: NoInfer<Event>[]
) {
  return {
    when(command: NoInfer<C>) {
      const run = () => decider.decide(command, fold(decider, history));
      return {
        then(expected: NoInfer<Event>[]): void {
          expect(run()).to.deep.equal(expected);
        },
        thenRejected(code: ErrorCode, message?: RegExp): void {
          let caught: unknown;
          try {
            run();
          } catch (error) {
            caught = error;
          }
          expect(caught, "the command should have been rejected").to.be.instanceOf(DomainError);
          expect((caught as DomainError).code).to.equal(code);
          if (message) expect((caught as DomainError).message).to.match(message);
        },
      };
    },
  };
}
