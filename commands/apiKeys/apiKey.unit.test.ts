import { given } from "../testing.js";
import { apiKey, type ApiKeyIssued } from "./apiKey.js";

const issued: ApiKeyIssued = { type: "ApiKeyIssued", data: { id: "k_1", userId: "u_1", hash: "ab", name: null, at: 5 } };
const issue = (userExists = true) => ({ type: "IssueApiKey" as const, data: { ...issued.data, userExists } });
const revoke = (data: { id: string; userId?: string; at: number }) => ({ type: "RevokeApiKey" as const, data });

describe("commands/apiKeys", () => {
  it("issues a key", () => {
    given(apiKey).when(issue()).then([issued]);
  });
  it("refuses a key for a user that does not exist", () => {
    given(apiKey)
      .when(issue(false))
      .thenRejected("not_found", /user u_1/);
  });
  it("refuses to issue the same key id twice", () => {
    given(apiKey, issued).when(issue()).thenRejected("already_exists");
  });
  it("revokes a key", () => {
    given(apiKey, issued)
      .when(revoke({ id: "k_1", at: 6 }))
      .then([{ type: "ApiKeyRevoked", data: { id: "k_1", userId: "u_1", at: 6 } }]);
  });
  it("revoking twice changes nothing", () => {
    given(apiKey, issued, { type: "ApiKeyRevoked", data: { id: "k_1", userId: "u_1", at: 6 } })
      .when(revoke({ id: "k_1", at: 7 }))
      .then([]);
  });
  it("a user cannot revoke another user's key, nor learn that it exists", () => {
    given(apiKey, issued)
      .when(revoke({ id: "k_1", userId: "u_2", at: 6 }))
      .thenRejected("not_found");
  });
  it("revoking an unknown key is not found", () => {
    given(apiKey)
      .when(revoke({ id: "k_9", at: 6 }))
      .thenRejected("not_found");
  });
});
