import type { DomainEvent, Evolver } from "../decider.js";

// Only the SHA-256 of a key is ever recorded; the key itself is shown once to whoever created it.
export type ApiKeyIssued = DomainEvent<"ApiKeyIssued", { id: string; userId: string; hash: string; name: string | null; at: number }>;
export type ApiKeyRevoked = DomainEvent<"ApiKeyRevoked", { id: string; userId: string; at: number }>;
export type ApiKeyEvent = ApiKeyIssued | ApiKeyRevoked;

export type ApiKeyState =
  | { status: "none" }
  | { status: "active" | "revoked"; id: string; userId: string; hash: string };

export const apiKeyStream = (keyId: string) => `apikey-${keyId}`;

export const apiKey: Evolver<ApiKeyState, ApiKeyEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "ApiKeyIssued":
        return { status: "active", id: event.data.id, userId: event.data.userId, hash: event.data.hash };
      case "ApiKeyRevoked":
        return state.status === "none" ? state : { ...state, status: "revoked" };
    }
  },
};
