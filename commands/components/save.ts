import { CommandRejected, type Decide } from "../decider.js";
import type { ComponentEvent, ComponentSaved, ComponentState } from "./component.js";

export type SaveComponent = ComponentSaved["data"];

/** Saved code never changes: a new save is a new component id (the key then points to it). */
export const saveComponent: Decide<SaveComponent, ComponentState, ComponentEvent> = (command, state) => {
  if (state.status !== "none") throw new CommandRejected("component_exists", `component ${command.id} already exists`, 409);
  return [{ type: "ComponentSaved", data: { ...command } }];
};
