// Subscriptions and auto-subscriptions: every rule is in commands/subscriptions; this gathers the
// facts (can the caller see the emitter and the listener? is the subscription listed already?).
import type { EventStore } from "../store/eventStore.js";
import { CommandHandler, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import { streams } from "../../commands/streams.js";
import {
  autoSubscription as autoDecider,
  autoSubscriptionId,
  isGlob,
  subscription as subscriptionDecider,
  subscriptionId,
} from "../../commands/subscriptions/subscription.js";
import type { SubscriptionsReadModel } from "../readModels/subscriptions.js";
import type { Clock } from "../ids.js";

/** Who owns a resource a subscription names (a source, a workflow, a webhook), if it exists. */
export type OwnerOf = (id: string) => string | undefined;

export interface SubscriptionInput {
  /** The subscription's owner: the caller, or the org named by org_id. */
  readonly ownerId: string;
  readonly emitterId: string;
  readonly listenerId: string;
  readonly eventName: string;
  /** Whether the caller may see resources of this owner (theirs, or an org they belong to). */
  readonly canSee: (ownerId: string) => boolean;
  readonly by: string;
}

export class Subscriptions {
  readonly #subscriptions: HandlerOf<typeof subscriptionDecider>;
  readonly #autos: HandlerOf<typeof autoDecider>;

  constructor(
    store: EventStore,
    private readonly readModel: SubscriptionsReadModel,
    private readonly ownerOf: OwnerOf,
    private readonly clock: Clock,
  ) {
    this.#subscriptions = new CommandHandler(store, subscriptionDecider, streams.subscription);
    this.#autos = new CommandHandler(store, autoDecider, streams.autoSubscription);
  }

  /** Creates the subscription, or answers the one this triple already is. */
  async create(input: SubscriptionInput, options: HandleOptions = {}): Promise<{ id: string; position: number | undefined }> {
    const id = subscriptionId(input.ownerId, input.emitterId, input.listenerId, input.eventName);
    if (this.readModel.subscription(id)) return { id, position: undefined };
    const appended = await this.#subscriptions.handle(
      id,
      {
        type: "CreateSubscription",
        data: {
          id,
          ownerId: input.ownerId,
          emitterId: input.emitterId,
          listenerId: input.listenerId,
          eventName: input.eventName,
          by: input.by,
          at: Math.floor(this.clock.now() / 1000),
          emitterVisible: isGlob(input.emitterId) || this.#visible(input.emitterId, input.canSee),
          listenerVisible: this.#visible(input.listenerId, input.canSee),
        },
      },
      options,
    );
    return { id, position: appended.position };
  }

  async delete(input: Omit<SubscriptionInput, "by" | "canSee">, options: HandleOptions = {}): Promise<{ position: number | undefined }> {
    const id = subscriptionId(input.ownerId, input.emitterId, input.listenerId, input.eventName);
    const appended = await this.#subscriptions.handle(
      id,
      {
        type: "DeleteSubscription",
        data: {
          id,
          ownerId: input.ownerId,
          at: Math.floor(this.clock.now() / 1000),
          listed: this.readModel.subscription(id) !== undefined,
          // Deleting a source, workflow or webhook ends its subscriptions (they leave every list).
          ended: (!isGlob(input.emitterId) && this.ownerOf(input.emitterId) === undefined) || this.ownerOf(input.listenerId) === undefined,
        },
      },
      options,
    );
    return { position: appended.position };
  }

  async createAuto(
    input: Omit<SubscriptionInput, "emitterId">,
    options: HandleOptions = {},
  ): Promise<{ id: string; position: number | undefined }> {
    const id = autoSubscriptionId(input.ownerId, input.eventName, input.listenerId);
    const appended = await this.#autos.handle(
      id,
      {
        type: "CreateAutoSubscription",
        data: {
          id,
          ownerId: input.ownerId,
          eventName: input.eventName,
          listenerId: input.listenerId,
          by: input.by,
          at: Math.floor(this.clock.now() / 1000),
          listenerVisible: this.#visible(input.listenerId, input.canSee),
        },
      },
      options,
    );
    return { id, position: appended.position };
  }

  async deleteAuto(
    input: { ownerId: string; eventName: string; listenerId: string },
    options: HandleOptions = {},
  ): Promise<{ position: number | undefined }> {
    const id = autoSubscriptionId(input.ownerId, input.eventName, input.listenerId);
    const appended = await this.#autos.handle(
      id,
      { type: "DeleteAutoSubscription", data: { id, ownerId: input.ownerId, at: Math.floor(this.clock.now() / 1000) } },
      options,
    );
    return { position: appended.position };
  }

  #visible(id: string, canSee: (ownerId: string) => boolean): boolean {
    const owner = this.ownerOf(id);
    return owner !== undefined && canSee(owner);
  }
}
