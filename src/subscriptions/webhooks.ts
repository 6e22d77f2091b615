// Webhooks: the rules are in commands/webhooks; this makes and seals signing secrets, and opens
// them for their owner and for delivery.
import type { EventStore } from "../store/eventStore.js";
import { CommandHandler, type HandleOptions, type HandlerOf } from "../../commands/handler.js";
import { streams } from "../../commands/streams.js";
import { webhook as webhookDecider, type SealedSecret } from "../../commands/webhooks/webhook.js";
import type { Webhook } from "../readModels/webhooks.js";
import { LRUCache } from "lru-cache";
import type { Sealer } from "../secrets/sealer.js";
import { generateSecret } from "../delivery/signing.js";
import { newId, type Clock } from "../ids.js";

/** After a rotation the previous secret still signs for this long, so receivers can switch over. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 60 * 60 * 1000;

export class Webhooks {
  readonly #webhooks: HandlerOf<typeof webhookDecider>;

  constructor(
    store: EventStore,
    private readonly sealer: Sealer,
    private readonly clock: Clock,
  ) {
    this.#webhooks = new CommandHandler(store, webhookDecider, streams.webhook);
  }

  async create(
    input: { ownerId: string; creatorId: string; url: string; name: string | null; description: string | null },
    options: HandleOptions = {},
  ): Promise<{ id: string; position: number | undefined }> {
    const id = newId("wh");
    const appended = await this.#webhooks.handle(
      id,
      {
        type: "CreateWebhook",
        data: { id, ...input, secret: this.#seal(generateSecret()), at: this.clock.now() },
      },
      options,
    );
    return { id, position: appended.position };
  }

  async update(id: string, fields: { url?: string; name?: string | null; description?: string | null }, options: HandleOptions = {}) {
    return this.#webhooks.handle(id, { type: "UpdateWebhook", data: { id, ...fields, at: this.clock.now() } }, options);
  }

  async pause(id: string, options: HandleOptions = {}) {
    return this.#webhooks.handle(id, { type: "PauseWebhook", data: { id, at: this.clock.now() } }, options);
  }

  async resume(id: string, options: HandleOptions = {}) {
    return this.#webhooks.handle(id, { type: "ResumeWebhook", data: { id, at: this.clock.now() } }, options);
  }

  /** By the delivery worker, when deliveries kept failing. */
  async disable(id: string, reason: string, options: HandleOptions = {}) {
    return this.#webhooks.handle(id, { type: "DisableWebhook", data: { id, reason, at: this.clock.now() } }, options);
  }

  async rotateSecret(id: string, options: HandleOptions = {}) {
    const now = this.clock.now();
    return this.#webhooks.handle(
      id,
      {
        type: "RotateWebhookSecret",
        data: { id, secret: this.#seal(generateSecret()), previousValidUntil: now + PREVIOUS_SECRET_VALID_MS, at: now },
      },
      options,
    );
  }

  async delete(id: string, options: HandleOptions = {}) {
    return this.#webhooks.handle(id, { type: "DeleteWebhook", data: { id, at: this.clock.now() } }, options);
  }

  /**
   * Opened signing secrets by their sealed text: every delivery is signed, and opening (AES-GCM)
   * on each one cost more than the signature. A rotation seals a new text, so it is a new entry.
   */
  readonly #opened = new LRUCache<string, string>({ max: 10_000 });

  /** The secret in clear (its owner may read it, as in Svix or Convoy). */
  secretOf(webhook: Webhook): string {
    return this.#open(webhook.secret as { $sealed: string });
  }

  #open(sealed: { $sealed: string }): string {
    let clear = this.#opened.get(sealed.$sealed);
    if (clear === undefined) {
      clear = this.sealer.open(sealed) as string;
      this.#opened.set(sealed.$sealed, clear);
    }
    return clear;
  }

  /** Every secret that signs deliveries now: the current one, and the previous one during its grace period. */
  signingSecrets(webhook: Webhook, now: number): string[] {
    const previous =
      webhook.previousSecret && webhook.previousSecret.validUntil > now
        ? [this.#open(webhook.previousSecret.secret as { $sealed: string })]
        : [];
    return [this.secretOf(webhook), ...previous];
  }

  #seal(secret: string): SealedSecret {
    return this.sealer.seal(secret) as unknown as SealedSecret;
  }
}
