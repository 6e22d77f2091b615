import { CommandRejected, type Decide } from "../decider.js";
import type { SourceEvent, SourceState } from "./source.js";

export type DeleteSource = { id: string; at: number };

export const deleteSource: Decide<DeleteSource, SourceState, SourceEvent> = (command, state) => {
  if (state.status !== "deployed") throw new CommandRejected("not_found", `source ${command.id} not found`, 404);
  return [{ type: "SourceDeleted", data: { id: command.id, ownerId: state.ownerId, nameSlug: state.nameSlug, at: command.at } }];
};
