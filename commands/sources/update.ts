import { CommandRejected, type Decide } from "../decider.js";
import type { SourceEvent, SourceState, SourceUpdated } from "./source.js";

export type UpdateSource = SourceUpdated["data"];

export const updateSource: Decide<UpdateSource, SourceState, SourceEvent> = (command, state) => {
  if (state.status !== "deployed") throw new CommandRejected("not_found", `source ${command.id} not found`, 404);
  return [{ type: "SourceUpdated", data: { ...command } }];
};
