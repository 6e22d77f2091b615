import semver from "semver";
import { DomainError, type Command, type Decider, type DomainEvent } from "../decider.js";
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
    /** An uploaded multi-file component: every file (path → text) and the entry's path; `code` is the entry's text. */
    files?: Record<string, string>;
    entry?: string;
    configurableProps: ConfigurableProp[];
    /** What the runtime learned on save (normalized props, dedupe, hooks, bundle, …): opaque here. */
    meta: Record<string, unknown>;
    at: number;
  }
>;
export type ComponentEvent = ComponentSaved;

export type ComponentState = { status: "none" } | { status: "saved"; id: string; ownerId: string };

export const REGISTRY_OWNER = "registry";
/** Registry keys: app_name_slug-slugified-component-name (the seed). */
export const REGISTRY_KEY = /^[a-z0-9]+(?:_[a-z0-9]+)*-[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Saved code never changes: a new save is a new component id (the key then points to it). */
export type SaveComponent = Command<"SaveComponent", ComponentSaved["data"]>;
/** Publishing to the public registry: key@version is claimed first (names), so it is immutable. */
export type PublishComponent = Command<"PublishComponent", ComponentSaved["data"]>;
export type ComponentCommand = SaveComponent | PublishComponent;

export const component: Decider<ComponentCommand, ComponentState, ComponentEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(_state, event) {
    return { status: "saved", id: event.data.id, ownerId: event.data.ownerId };
  },
  decide(command, state) {
    const data = command.data;
    if (state.status !== "none") throw new DomainError("already_exists", `component ${data.id} already exists`);
    switch (command.type) {
      case "SaveComponent":
        if (data.ownerId === REGISTRY_OWNER) throw new DomainError("invalid_request", "registry components are published, not saved");
        return [{ type: "ComponentSaved", data: { ...data } }];
      case "PublishComponent":
        if (data.ownerId !== REGISTRY_OWNER) throw new DomainError("invalid_request", "only the registry publishes");
        if (!data.key) throw new DomainError("invalid_component", "a registry component needs a key");
        if (!REGISTRY_KEY.test(data.key)) {
          throw new DomainError("invalid_component", `registry key "${data.key}" must look like app_slug-slugified-name`);
        }
        if (!semver.valid(data.version))
          throw new DomainError("invalid_component", `registry version "${data.version}" is not a semantic version`);
        return [{ type: "ComponentSaved", data: { ...data } }];
    }
  },
};
