import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";
import type { NormalizedProp } from "../../src/runtime/types.js";

/** Configured props as stored: secret values are sealed ({"$sealed": "…"}), never in clear. */
export type StoredProps = Record<string, unknown>;

/**
 * The props the component's additionalProps() added for this source's configured values, as it
 * described them at the deploy or update (absent when it has no such method): they are the
 * source's props as much as the component's own, its HTTP interface or timer among them.
 */
export type AdditionalProps = readonly NormalizedProp[];

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
    additionalProps?: AdditionalProps;
    active: boolean;
    at: number;
  }
>;
export type SourceUpdated = DomainEvent<
  "SourceUpdated",
  {
    id: string;
    componentId: string;
    name: string;
    nameSlug: string;
    configuredProps: StoredProps;
    additionalProps?: AdditionalProps;
    active: boolean;
    at: number;
  }
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

export type Hook = "deploy" | "activate" | "deactivate";

/** What the hooks that ran before the command did: a failure refuses the command unless forced. */
export interface HookResults {
  readonly failed: readonly { readonly hook: Hook; readonly message: string }[];
  readonly force: boolean;
}

/** `componentType`: only sources can be deployed; actions run in workflows. */
export type DeploySource = Command<"DeploySource", SourceDeployed["data"] & { componentType: string; hooks: HookResults }>;
export type UpdateSource = Command<"UpdateSource", SourceUpdated["data"] & { componentType: string; hooks: HookResults }>;
export type DeleteSource = Command<"DeleteSource", { id: string; at: number; hooks: HookResults }>;
export type SourceCommand = DeploySource | UpdateSource | DeleteSource;

/** The seed's state table: which of the component's hooks run around a deploy, an update, a delete. */
export const hooksAround = {
  deploy: (defined: readonly string[]): Hook[] => (["deploy", "activate"] as const).filter((h) => defined.includes(h)),
  update: (defined: readonly string[], wasActive: boolean, endsActive: boolean) => ({
    before: wasActive && defined.includes("deactivate") ? (["deactivate"] as Hook[]) : [],
    after: endsActive && defined.includes("activate") ? (["activate"] as Hook[]) : [],
  }),
  delete: (defined: readonly string[], wasActive: boolean): Hook[] => (wasActive && defined.includes("deactivate") ? ["deactivate"] : []),
};

function checkHooks(hooks: HookResults): void {
  const failed = hooks.failed[0];
  if (failed && !hooks.force) throw new DomainError("hook_failed", `the ${failed.hook} hook failed: ${failed.message}`);
}

function checkDeployable(componentType: string): void {
  if (componentType !== "source") {
    throw new DomainError(
      "invalid_request",
      `only sources can be deployed; this component is an ${componentType} (actions run as workflow steps)`,
    );
  }
}

export const source: Decider<SourceCommand, SourceState, SourceEvent> = {
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
  decide(command, state) {
    switch (command.type) {
      case "DeploySource": {
        const { componentType, hooks, ...data } = command.data;
        if (state.status !== "none") throw new DomainError("already_exists", `source ${data.id} already exists`);
        checkDeployable(componentType);
        checkHooks(hooks);
        return [{ type: "SourceDeployed", data }];
      }
      case "UpdateSource": {
        const { componentType, hooks, ...data } = command.data;
        if (state.status !== "deployed") throw notFound(`source ${data.id}`);
        checkDeployable(componentType);
        checkHooks(hooks);
        return [{ type: "SourceUpdated", data }];
      }
      case "DeleteSource": {
        if (state.status !== "deployed") throw notFound(`source ${command.data.id}`);
        checkHooks(command.data.hooks);
        return [
          { type: "SourceDeleted", data: { id: command.data.id, ownerId: state.ownerId, nameSlug: state.nameSlug, at: command.data.at } },
        ];
      }
    }
  },
};
