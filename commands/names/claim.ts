import { CommandRejected, type Decide } from "../decider.js";
import type { NameEvent, NameState } from "./name.js";

export type ClaimName = { scope: string; name: string; holder: string; at: number };

/** Claiming a name one already holds is a no-op, so a retried command is harmless. */
export const claimName: Decide<ClaimName, NameState, NameEvent> = (command, state) => {
  if (state.holder === command.holder) return [];
  if (state.holder !== undefined) throw new CommandRejected("name_taken", `${command.scope} "${command.name}" is already taken`, 409);
  return [{ type: "NameClaimed", data: { ...command } }];
};
