import { CommandRejected, type Decide } from "../decider.js";
import type { SourceDeployed, SourceEvent, SourceState } from "./source.js";

export type DeploySource = SourceDeployed["data"];

export const deploySource: Decide<DeploySource, SourceState, SourceEvent> = (command, state) => {
  if (state.status !== "none") throw new CommandRejected("source_exists", `source ${command.id} already exists`, 409);
  return [{ type: "SourceDeployed", data: { ...command } }];
};
