import type { DomainEvent, Evolver } from "../decider.js";

// A unique name (username, orgname, a component key in a namespace) is its own tiny aggregate,
// so uniqueness holds across processes through the store's optimistic concurrency alone.
export type NameClaimed = DomainEvent<"NameClaimed", { scope: string; name: string; holder: string; at: number }>;
export type NameReleased = DomainEvent<"NameReleased", { scope: string; name: string; holder: string; at: number }>;
export type NameEvent = NameClaimed | NameReleased;

export type NameState = { holder: string | undefined };

export const nameStream = (scope: string, name: string) => `name-${scope}-${name}`;

export const uniqueName: Evolver<NameState, NameEvent> = {
  initialState: () => ({ holder: undefined }),
  evolve(_state, event) {
    switch (event.type) {
      case "NameClaimed":
        return { holder: event.data.holder };
      case "NameReleased":
        return { holder: undefined };
    }
  },
};
