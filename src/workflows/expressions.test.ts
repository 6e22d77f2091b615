import { expect } from "chai";
import { evaluate, expressionProblems, hasExpression, parsePath } from "./expressions.js";

describe("workflow prop expressions", () => {
  const steps = {
    trigger: { event: { body: { name: "Ada", tags: ["a", "b"], "odd key": 1 } } },
    first: { $return_value: { n: 3 }, label: "x" },
  };

  it("a whole-string expression takes the value as it is; embedded ones become text", () => {
    expect(evaluate("{{steps.first.$return_value}}", steps)).to.deep.equal({ n: 3 });
    expect(evaluate("{{ steps.trigger.event.body.tags[1] }}", steps)).to.equal("b");
    expect(evaluate('{{steps.trigger.event.body["odd key"]}}', steps)).to.equal(1);
    expect(evaluate("hi {{steps.trigger.event.body.name}}, n={{steps.first.$return_value}}", steps)).to.equal('hi Ada, n={"n":3}');
    expect(evaluate({ nested: ["{{steps.first.label}}", 2] }, steps)).to.deep.equal({ nested: ["x", 2] });
  });

  it("a missing path is undefined (or empty text); prototype properties are not reachable", () => {
    expect(evaluate("{{steps.nothing.here}}", steps)).to.equal(undefined);
    expect(evaluate("[{{steps.nothing}}]", steps)).to.equal("[]");
    expect(evaluate("{{steps.first.constructor}}", steps)).to.equal(undefined);
    expect(evaluate("{{steps.__proto__}}", steps)).to.equal(undefined);
  });

  it("only paths into steps parse: no calls, no other roots", () => {
    expect(parsePath("steps.a[0].b")).to.deep.equal({ segments: ["a", 0, "b"] });
    for (const bad of ["process.env", "steps.a()", "steps.a + 1", "steps[a]", "globalThis"]) {
      expect(parsePath(bad), bad).to.have.property("error");
    }
    expect(expressionProblems({ a: "{{process.env.X}}", b: ["ok {{steps.x}}"] }, "props")).to.deep.equal([
      { path: "props.a", message: "{{process.env.X}} must start with steps (e.g. {{steps.trigger.event.body}})" },
    ]);
    expect(hasExpression({ a: ["{{steps.x}}"] })).to.equal(true);
    expect(hasExpression({ a: "plain {text}" })).to.equal(false);
  });
});
