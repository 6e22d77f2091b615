import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

// Only the SHA-256 of a key is ever recorded; the key itself is shown once to whoever created it.
export type ApiKeyIssued = DomainEvent<"ApiKeyIssued", { id: string; userId: string; hash: string; name: string | null; at: number }>;
export type ApiKeyRevoked = DomainEvent<"ApiKeyRevoked", { id: string; userId: string; at: number }>;
export type ApiKeyEvent = ApiKeyIssued | ApiKeyRevoked;

export type ApiKeyState = { status: "none" } | { status: "active" | "revoked"; id: string; userId: string; hash: string };

/** `userExists`: the application read the user's stream; a key for nobody is refused. */
export type IssueApiKey = Command<"IssueApiKey", ApiKeyIssued["data"] & { userExists: boolean }>;
/** userId, when given, must own the key: a user revoking someone else's key learns nothing. */
export type RevokeApiKey = Command<"RevokeApiKey", { id: string; userId?: string; at: number }>;
export type ApiKeyCommand = IssueApiKey | RevokeApiKey;

export const apiKey: Decider<ApiKeyCommand, ApiKeyState, ApiKeyEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "ApiKeyIssued":
        return { status: "active", id: event.data.id, userId: event.data.userId, hash: event.data.hash };
      case "ApiKeyRevoked":
        return state.status === "none" ? state : { ...state, status: "revoked" };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "IssueApiKey": {
        const { userExists, ...data } = command.data;
        if (!userExists) throw notFound(`user ${data.userId}`);
        if (state.status !== "none") throw new DomainError("already_exists", `api key ${data.id} already exists`);
        return [{ type: "ApiKeyIssued", data }];
      }
      case "RevokeApiKey": {
        const { id, userId, at } = command.data;
        if (state.status === "none" || (userId !== undefined && state.userId !== userId)) throw notFound(`api key ${id}`);
        if (state.status === "revoked") return [];
        return [{ type: "ApiKeyRevoked", data: { id, userId: state.userId, at } }];
      }
    }
  },
};
