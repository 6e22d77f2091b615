// Connected accounts: app credentials kept once (sealed), bound into sources by id. Every rule is
// the decider's (commands/connectedAccounts); this seals the credentials, gathers the facts the
// rules need (which sources bind an account, the account's state) and opens credentials only to
// run user code.
import { CommandHandler, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import { checkBinding, connectedAccount, isAccountBinding } from "../../commands/connectedAccounts/connectedAccount.js";
import { invalid } from "../../commands/decider.js";
import { streams } from "../../commands/streams.js";
import type { EventStore } from "../store/eventStore.js";
import type { ConnectedAccountsReadModel } from "../readModels/connectedAccounts.js";
import type { Sealed, Sealer } from "../secrets/sealer.js";
import type { NormalizedProp } from "../runtime/types.js";
import { newId, type Clock } from "../ids.js";

/** The seed's limit on a configured value applies to credentials too. */
const MAX_AUTH_BYTES = 64 * 1024;

export interface Written {
  readonly position: number | undefined;
}

const seconds = (clock: Clock) => Math.floor(clock.now() / 1000);
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export class ConnectedAccounts {
  readonly #accounts: HandlerOf<typeof connectedAccount>;

  constructor(
    private readonly store: EventStore,
    private readonly sealer: Sealer,
    private readonly clock: Clock,
    private readonly view: ConnectedAccountsReadModel,
  ) {
    this.#accounts = new CommandHandler(store, connectedAccount, streams.account);
  }

  async create(
    input: { ownerId: string; creatorId: string; app: string; name?: string | null; auth: unknown },
    options: HandleOptions = {},
  ): Promise<Written & { id: string }> {
    if (!isPlainObject(input.auth))
      throw invalid("auth must be an object of credential fields", [{ path: "body.auth", message: "must be an object" }]);
    if (Buffer.byteLength(JSON.stringify(input.auth)) > MAX_AUTH_BYTES) {
      throw invalid(`auth is over ${MAX_AUTH_BYTES} bytes`, [{ path: "body.auth", message: `is over ${MAX_AUTH_BYTES} bytes` }]);
    }
    const id = newId("apn");
    const auth = input.auth;
    const fields = Object.keys(auth).filter((k) => auth[k] !== undefined);
    const created = await this.#accounts.handle(
      id,
      {
        type: "CreateConnectedAccount",
        data: {
          id,
          ownerId: input.ownerId,
          creatorId: input.creatorId,
          app: input.app,
          name: input.name ?? null,
          auth: this.sealer.seal(input.auth),
          fields,
          at: seconds(this.clock),
        },
      },
      options,
    );
    return { id, position: created.position };
  }

  async delete(id: string, options: HandleOptions = {}): Promise<Written> {
    const deleted = await this.#accounts.handle(
      id,
      { type: "DeleteConnectedAccount", data: { id, at: seconds(this.clock), usedBy: this.view.usedBy(id) } },
      options,
    );
    return { position: deleted.position };
  }

  /**
   * Checks every account a source's configured props bind against the account's own stream (the
   * log, not a read model that may lag): the source's owner's, and of the prop's app.
   */
  async checkBindings(ownerId: string, props: readonly NormalizedProp[], given: Readonly<Record<string, unknown>>): Promise<void> {
    for (const prop of props) {
      if (prop.type !== "app" && prop.type !== "app[]") continue;
      const value = given[prop.name];
      for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) {
        if (!isAccountBinding(item)) continue;
        const accountId = item.authProvisionId;
        const { state } = /^apn_[0-9a-z]+$/.test(accountId)
          ? await this.#accounts.load(accountId)
          : { state: connectedAccount.initialState() };
        checkBinding(state, { accountId, ownerId, app: prop.app, prop: prop.name });
      }
    }
  }

  /** The sealed credentials of an account, or undefined once it is gone. */
  async sealedAuth(accountId: string): Promise<Sealed | undefined> {
    const viewed = this.view.account(accountId);
    if (viewed) return viewed.auth;
    // The read model of this node may not have seen a fresh account yet: the log has.
    const recorded = await this.store.readStream(streams.account(accountId));
    const createdEvent = recorded.find((e) => e.type === "ConnectedAccountCreated");
    if (!createdEvent || recorded.some((e) => e.type === "ConnectedAccountDeleted")) return undefined;
    return (createdEvent.data as { auth: Sealed }).auth;
  }
}
