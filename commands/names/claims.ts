// The one multi-stream operation of the command layer: claim a unique name, then create the
// aggregate that holds it. The two appends are not one transaction. A crash between them leaves
// the name claimed by an id that never came into being: the name is blocked until a later claim
// finds the holder's stream missing and the claim over a minute old, and takes it over
// (ABANDONED_CLAIM_SECONDS). Nothing else is left half-written, since the claim comes first.
import type { EventStore } from "../../src/store/eventStore.js";
import { CommandHandler, type Appended, type HandleOptions, type HandlerOf } from "../handler.js";
import { historyStreams, streams } from "../streams.js";
import { DomainError } from "../decider.js";
import { uniqueName, type NameEvent } from "./name.js";

export interface Claim {
  readonly scope: string;
  readonly name: string;
  readonly holder: string;
  /** Epoch seconds. */
  readonly at: number;
}

export class Names {
  readonly #names: HandlerOf<typeof uniqueName>;

  constructor(private readonly store: EventStore) {
    this.#names = new CommandHandler(store, uniqueName, (key) => key);
  }

  /** Claims the name, or throws name_taken; taking over a claim its holder abandoned. */
  async claim(claim: Claim, options: HandleOptions = {}): Promise<Appended<NameEvent>> {
    const stream = streams.name(claim.scope, claim.name);
    const { state } = await this.#names.load(stream);
    const holderExists = state.holder === undefined || state.holder === claim.holder ? undefined : await this.#exists(state.holder);
    return this.#names.handle(
      stream,
      { type: "ClaimName", data: { ...claim, ...(holderExists === undefined ? {} : { holderExists }) } },
      options,
    );
  }

  async release(claim: Claim, options: HandleOptions = {}): Promise<Appended<NameEvent>> {
    return this.#names.handle(streams.name(claim.scope, claim.name), { type: "ReleaseName", data: { ...claim } }, options);
  }

  /** Claims `base`, else `base-1`, `base-2`, … (name_slug); `taken` skips names known to be held. */
  async claimFirstFree(
    claim: Omit<Claim, "name"> & { base: string },
    taken: (name: string) => boolean,
    options: HandleOptions = {},
  ): Promise<{ name: string; appended: Appended<NameEvent> }> {
    for (let n = 0; n < 1000; n++) {
      const name = n === 0 ? claim.base : `${claim.base}-${n}`;
      if (taken(name)) continue;
      try {
        return { name, appended: await this.claim({ scope: claim.scope, name, holder: claim.holder, at: claim.at }, options) };
      } catch (error) {
        if (error instanceof DomainError && error.code === "name_taken") continue;
        throw error;
      }
    }
    throw new DomainError("name_taken", `too many names like "${claim.base}"`);
  }

  /** The holder of a name, if any (the registry: which component holds key@version). */
  async holder(scope: string, name: string): Promise<string | undefined> {
    return (await this.#names.load(streams.name(scope, name))).state.holder;
  }

  async #exists(holder: string): Promise<boolean> {
    // Holders of scoped names may be "<owner>/<slug>"-style ids; their own stream is named by their id prefix.
    const own = historyStreams(holder)?.[0];
    if (!own) return true; // unknown kind of holder: never taken over
    return (await this.store.streamRevision(own)) !== undefined;
  }
}
