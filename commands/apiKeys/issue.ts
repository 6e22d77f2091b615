import { CommandRejected, type Decide } from "../decider.js";
import type { ApiKeyEvent, ApiKeyState } from "./apiKey.js";

export type IssueApiKey = { id: string; userId: string; hash: string; name: string | null; at: number };

export const issueApiKey: Decide<IssueApiKey, ApiKeyState, ApiKeyEvent> = (command, state) => {
  if (state.status !== "none") throw new CommandRejected("key_exists", `api key ${command.id} already exists`, 409);
  return [{ type: "ApiKeyIssued", data: { ...command } }];
};
