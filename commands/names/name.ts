import { DomainError, type Command, type Decider, type DomainEvent } from "../decider.js";

// A unique name (username, orgname, a source's name_slug in its owner's namespace, key@version in
// the registry) is its own tiny aggregate, so uniqueness holds across processes and nodes through
// the store's optimistic concurrency alone.
export type NameClaimed = DomainEvent<"NameClaimed", { scope: string; name: string; holder: string; at: number }>;
export type NameReleased = DomainEvent<"NameReleased", { scope: string; name: string; holder: string; at: number }>;
export type NameEvent = NameClaimed | NameReleased;

export type NameState = { holder: string | undefined; since: number };

/** A claim left by a crash between claiming and creating is taken over after this long (seconds). */
export const ABANDONED_CLAIM_SECONDS = 60;

/**
 * `holderExists`: whether the current holder's own stream exists (read by the application when
 * the name is held by someone else); a holder that never came into being left the claim behind.
 */
export type ClaimName = Command<"ClaimName", NameClaimed["data"] & { holderExists?: boolean }>;
export type ReleaseName = Command<"ReleaseName", NameReleased["data"]>;
export type NameCommand = ClaimName | ReleaseName;

export const uniqueName: Decider<NameCommand, NameState, NameEvent> = {
  initialState: () => ({ holder: undefined, since: 0 }),
  evolve(_state, event) {
    switch (event.type) {
      case "NameClaimed":
        return { holder: event.data.holder, since: event.data.at };
      case "NameReleased":
        return { holder: undefined, since: event.data.at };
    }
  },
  decide(command, state) {
    const { scope, name, holder, at } = command.data;
    switch (command.type) {
      case "ClaimName": {
        const { holderExists, ...claim } = command.data;
        // Claiming a name one already holds is a no-op, so a retried command is harmless.
        if (state.holder === holder) return [];
        if (state.holder !== undefined) {
          const abandoned = holderExists === false && at - state.since >= ABANDONED_CLAIM_SECONDS;
          if (!abandoned) throw new DomainError("name_taken", `${scope} "${name}" is already taken`);
          return [
            { type: "NameReleased", data: { scope, name, holder: state.holder, at } },
            { type: "NameClaimed", data: claim },
          ];
        }
        return [{ type: "NameClaimed", data: claim }];
      }
      case "ReleaseName":
        return state.holder === holder ? [{ type: "NameReleased", data: { ...command.data } }] : [];
    }
  },
};
