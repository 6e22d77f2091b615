import type { DomainEvent, Evolver } from "../decider.js";
import type { ConfigurableProp } from "../../src/runtime/types.js";

export type ComponentSaved = DomainEvent<
  "ComponentSaved",
  {
    id: string;
    /** u_/o_ id, or "registry" for published registry components. */
    ownerId: string;
    key: string | null;
    name: string;
    version: string;
    /** "source" or "action". */
    type: string;
    description: string | null;
    code: string;
    codeHash: string;
    /** Where the code came from, kept as metadata (and to resolve relative imports). */
    url: string | null;
    configurableProps: ConfigurableProp[];
    /** What the runtime learned on save (normalized props, dedupe, hooks, …): opaque here. */
    meta: Record<string, unknown>;
    at: number;
  }
>;
export type ComponentEvent = ComponentSaved;

export type ComponentState = { status: "none" } | { status: "saved"; id: string; ownerId: string };

export const componentStream = (componentId: string) => `component-${componentId}`;
export const REGISTRY_OWNER = "registry";

export const component: Evolver<ComponentState, ComponentEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(_state, event) {
    return { status: "saved", id: event.data.id, ownerId: event.data.ownerId };
  },
};
