import { expect } from "chai";
import { Type } from "@sinclair/typebox";
import { DomainError } from "../commands/decider.js";
import { bodyValidator, schemaValidator } from "./validation.js";

const problems = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    return { message: (error as DomainError).message, details: (error as DomainError).details };
  }
  throw new Error("expected a validation error");
};

describe("validation errors (ajv, simplified)", () => {
  const Trigger = Type.Object(
    { type: Type.Union([Type.Literal("http"), Type.Literal("timer")]), cron: Type.Optional(Type.String()) },
    { additionalProperties: false },
  );
  const Definition = Type.Object({ trigger: Type.Union([Trigger, Type.Literal("http"), Type.Literal("timer")]) });
  const validate = schemaValidator(Definition, "definition");

  it("a union's bad constant is one problem naming the allowed values, from the branch that got furthest", () => {
    expect(problems(() => validate({ trigger: { type: "bogus" } }))).to.deep.equal({
      message: 'definition.trigger.type must be one of "http", "timer"',
      details: [{ path: "definition.trigger.type", message: 'must be one of "http", "timer"' }],
    });
  });

  it("a value no branch takes: each kind of branch says once what it wanted, without the union's summary", () => {
    expect(problems(() => validate({ trigger: "bogus" })).details).to.deep.equal([
      { path: "definition.trigger", message: "must be object" },
      { path: "definition.trigger", message: 'must be one of "http", "timer"' },
    ]);
  });

  it("problems elsewhere are kept as they were, every one", () => {
    const body = bodyValidator(Type.Object({ a: Type.Integer(), b: Type.String() }, { additionalProperties: false }));
    expect(problems(() => body({ a: "x", b: 1, c: 2 })).details).to.have.deep.members([
      { path: "body.a", message: "must be integer" },
      { path: "body.b", message: "must be string" },
      { path: "body.c", message: "is not a known parameter" },
    ]);
  });
});
