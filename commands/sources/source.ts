import type { DomainEvent, Evolver } from "../decider.js";

/** Configured props as stored: secret values are sealed ({"$sealed": "…"}), never in clear. */
export type StoredProps = Record<string, unknown>;

export type SourceDeployed = DomainEvent<
  "SourceDeployed",
  {
    id: string;
    ownerId: string;
    /** The user who deployed it; its runs are billed to them. */
    creatorId: string;
    componentId: string;
    name: string;
    nameSlug: string;
    /** The path segment of the source's HTTP endpoint, stable for the source's life. */
    endpointId: string;
    configuredProps: StoredProps;
    active: boolean;
    at: number;
  }
>;
export type SourceUpdated = DomainEvent<
  "SourceUpdated",
  { id: string; componentId: string; name: string; nameSlug: string; configuredProps: StoredProps; active: boolean; at: number }
>;
export type SourceDeleted = DomainEvent<"SourceDeleted", { id: string; ownerId: string; nameSlug: string; at: number }>;
export type SourceEvent = SourceDeployed | SourceUpdated | SourceDeleted;

export type SourceState =
  | { status: "none" | "deleted" }
  | {
      status: "deployed";
      id: string;
      ownerId: string;
      componentId: string;
      name: string;
      nameSlug: string;
      configuredProps: StoredProps;
      active: boolean;
    };

export const sourceStream = (sourceId: string) => `source-${sourceId}`;

export const source: Evolver<SourceState, SourceEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    switch (event.type) {
      case "SourceDeployed": {
        const { id, ownerId, componentId, name, nameSlug, configuredProps, active } = event.data;
        return { status: "deployed", id, ownerId, componentId, name, nameSlug, configuredProps, active };
      }
      case "SourceUpdated":
        if (state.status !== "deployed") return state;
        return {
          ...state,
          componentId: event.data.componentId,
          name: event.data.name,
          nameSlug: event.data.nameSlug,
          configuredProps: event.data.configuredProps,
          active: event.data.active,
        };
      case "SourceDeleted":
        return { status: "deleted" };
    }
  },
};
