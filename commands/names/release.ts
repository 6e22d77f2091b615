import type { Decide } from "../decider.js";
import type { NameEvent, NameState } from "./name.js";

export type ReleaseName = { scope: string; name: string; holder: string; at: number };

export const releaseName: Decide<ReleaseName, NameState, NameEvent> = (command, state) =>
  state.holder === command.holder ? [{ type: "NameReleased", data: { ...command } }] : [];
