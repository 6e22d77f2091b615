import { given } from "../testing.js";
import { apiKey, type ApiKeyIssued } from "./apiKey.js";
import { issueApiKey } from "./issue.js";
import { revokeApiKey } from "./revoke.js";

const issued: ApiKeyIssued = { type: "ApiKeyIssued", data: { id: "k_1", userId: "u_1", hash: "ab", name: null, at: 5 } };

describe("commands/apiKeys", () => {
  it("issues a key", () => {
    given(apiKey).when(issueApiKey, issued.data).then([issued]);
  });
  it("refuses to issue the same key id twice", () => {
    given(apiKey, issued).when(issueApiKey, issued.data).thenRejected("key_exists", 409);
  });
  it("revokes a key", () => {
    given(apiKey, issued).when(revokeApiKey, { id: "k_1", at: 6 })
      .then([{ type: "ApiKeyRevoked", data: { id: "k_1", userId: "u_1", at: 6 } }]);
  });
  it("revoking twice changes nothing", () => {
    given(apiKey, issued, { type: "ApiKeyRevoked", data: { id: "k_1", userId: "u_1", at: 6 } })
      .when(revokeApiKey, { id: "k_1", at: 7 }).then([]);
  });
  it("a user cannot revoke another user's key, nor learn that it exists", () => {
    given(apiKey, issued).when(revokeApiKey, { id: "k_1", userId: "u_2", at: 6 }).thenRejected("not_found", 404);
  });
  it("revoking an unknown key is not found", () => {
    given(apiKey).when(revokeApiKey, { id: "k_9", at: 6 }).thenRejected("not_found", 404);
  });
});
