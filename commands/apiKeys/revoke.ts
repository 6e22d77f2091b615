import { CommandRejected, type Decide } from "../decider.js";
import type { ApiKeyEvent, ApiKeyState } from "./apiKey.js";

/** userId, when given, must own the key: a user revoking someone else's key learns nothing. */
export type RevokeApiKey = { id: string; userId?: string; at: number };

export const revokeApiKey: Decide<RevokeApiKey, ApiKeyState, ApiKeyEvent> = (command, state) => {
  if (state.status === "none" || (command.userId !== undefined && state.userId !== command.userId)) {
    throw new CommandRejected("not_found", `api key ${command.id} not found`, 404);
  }
  if (state.status === "revoked") return [];
  return [{ type: "ApiKeyRevoked", data: { id: command.id, userId: state.userId, at: command.at } }];
};
