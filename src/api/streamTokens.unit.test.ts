import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { DomainError } from "../../commands/decider.js";
import { STREAM_TOKEN_TTL_MS, StreamTokens } from "./streamTokens.js";

describe("StreamTokens", () => {
  const caller = { userId: "u_1", keyId: "k_1", operator: false };
  const key = randomBytes(32);
  let now = 1_000_000;
  const clock = { now: () => now };
  const revoked = new Set<string>();
  const tokens = () => new StreamTokens(key, clock, (keyId) => !revoked.has(keyId));
  const refusal = (f: () => unknown): string => {
    try {
      f();
    } catch (error) {
      expect(error).to.be.instanceOf(DomainError);
      expect((error as DomainError).code).to.equal("unauthorized");
      return (error as Error).message;
    }
    throw new Error("expected a refusal");
  };

  it("stands for the caller that minted it, on its source's SSE path, once", () => {
    const t = tokens();
    const { token, expiresAtMs } = t.mint(caller, "dc_a");
    expect(expiresAtMs).to.equal(now + STREAM_TOKEN_TTL_MS);
    expect(t.redeem(token, "GET", "/sources/dc_a/sse")).to.deep.equal(caller);
    expect(refusal(() => t.redeem(token, "GET", "/sources/dc_a/sse"))).to.match(/already used/);
  });

  it("opens nothing else: another source, another path, another method", () => {
    const t = tokens();
    const { token } = t.mint(caller, "dc_a");
    expect(refusal(() => t.redeem(token, "GET", "/sources/dc_b/sse"))).to.match(/another source/);
    expect(refusal(() => t.redeem(token, "GET", "/v1/sources/dc_a"))).to.match(/only opens/);
    expect(refusal(() => t.redeem(token, "POST", "/sources/dc_a/sse"))).to.match(/only opens/);
    // Still unused after those refusals.
    expect(t.redeem(token, "GET", "/sources/dc_a/sse").userId).to.equal("u_1");
  });

  it("expires 60 s after minting", () => {
    const t = tokens();
    const { token } = t.mint(caller, "dc_a");
    now += STREAM_TOKEN_TTL_MS;
    expect(refusal(() => t.redeem(token, "GET", "/sources/dc_a/sse"))).to.match(/expired/);
  });

  it("refuses a forged, altered or foreign token", () => {
    const t = tokens();
    const { token } = t.mint(caller, "dc_a");
    const [body, signature] = token.slice(3).split(".");
    const claims = JSON.parse(Buffer.from(body, "base64url").toString()) as Record<string, unknown>;
    const altered = Buffer.from(JSON.stringify({ ...claims, o: true })).toString("base64url");
    expect(refusal(() => t.redeem(`st_${altered}.${signature}`, "GET", "/sources/dc_a/sse"))).to.match(/not valid/);
    expect(refusal(() => t.redeem("st_garbage", "GET", "/sources/dc_a/sse"))).to.match(/not valid/);
    const elsewhere = new StreamTokens(randomBytes(32), clock, () => true).mint(caller, "dc_a").token;
    expect(refusal(() => t.redeem(elsewhere, "GET", "/sources/dc_a/sse"))).to.match(/not valid/);
  });

  it("works on another node sharing the key (stateless), and not once its key is revoked", () => {
    const { token } = tokens().mint(caller, "dc_a");
    expect(tokens().redeem(token, "GET", "/sources/dc_a/sse").keyId).to.equal("k_1");
    const second = tokens().mint(caller, "dc_a").token;
    revoked.add("k_1");
    expect(refusal(() => tokens().redeem(second, "GET", "/sources/dc_a/sse"))).to.match(/revoked/);
    revoked.clear();
  });
});
