import { expect } from "chai";
import { httpError } from "./client.js";

describe("user CLI: the server's refusal in one line", () => {
  const refused = (error: string, details: { path?: string; message: string }[]) =>
    httpError("POST", "http://h/v1/components/x/run", 400, { error, code: "invalid_request", details }).message;

  it("a message that is the first of several problems is said once, the others after it", () => {
    expect(
      refused('body.props.format must be one of ["YYYY"]', [
        { path: "body.props.format", message: 'must be one of ["YYYY"]' },
        { path: "body.props.index", message: "must be an integer" },
      ]),
    ).to.equal('body.props.format must be one of ["YYYY"]; body.props.index must be an integer');
  });

  it("a message that already says every problem stands alone; a summary is followed by the problems", () => {
    expect(refused("body.props.a must be a string", [{ path: "body.props.a", message: "must be a string" }])).to.equal(
      "body.props.a must be a string",
    );
    expect(refused("invalid component", [{ path: "props.a", message: "type is required" }])).to.equal(
      "invalid component: props.a type is required",
    );
  });
});
