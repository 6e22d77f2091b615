import { expect } from "chai";
import { JsonLimitError, MAX_JSON_DEPTH, checkJsonText, jsonDepth, parseJson, stringifyJson } from "./bounded.js";

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

describe("json/bounded", () => {
  it("counts nesting without parsing, ignoring brackets inside strings", () => {
    expect(jsonDepth("1")).to.equal(0);
    expect(jsonDepth('{"a":[1,{"b":2}]}')).to.equal(3);
    expect(jsonDepth('{"a":"[[[[\\"[["}')).to.equal(1);
    expect(jsonDepth(nested(100_000), 10)).to.equal(11);
  });

  it("parses text within the bounds and refuses deeper or longer text with a reason", () => {
    expect(parseJson(nested(MAX_JSON_DEPTH))).to.be.an("array");
    const deep = () => parseJson(nested(MAX_JSON_DEPTH + 1));
    expect(deep).to.throw(JsonLimitError).with.property("reason", "too_deep");
    expect(() => parseJson(nested(100_000)))
      .to.throw(JsonLimitError)
      .with.property("reason", "too_deep");
    expect(() => checkJsonText('"abcdef"', { maxLength: 4 }))
      .to.throw(JsonLimitError)
      .with.property("reason", "too_large");
    expect(() => parseJson("{nope"))
      .to.throw(JsonLimitError)
      .with.property("reason", "malformed");
  });

  it("stringifies user values, turning stack overflows and unserializable values into JsonLimitError", () => {
    expect(stringifyJson({ a: [1, 2] })).to.equal('{"a":[1,2]}');
    expect(stringifyJson(undefined)).to.equal("null");
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(() => stringifyJson(deep))
      .to.throw(JsonLimitError)
      .with.property("reason", "too_deep");
    let medium: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH + 5; i++) medium = [medium];
    expect(() => stringifyJson(medium))
      .to.throw(JsonLimitError)
      .with.property("reason", "too_deep");
    expect(() => stringifyJson({ n: 1n }))
      .to.throw(JsonLimitError)
      .with.property("reason", "malformed");
  });
});
