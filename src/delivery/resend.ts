// Re-sending one delivery by hand (as Svix and Convoy offer): the same delivery id (webhook-id), its
// payload rebuilt from the event while the event is still kept (the last 100 per emitter).
import type { Bus } from "../bus/bus.js";
import type { Delivery } from "../../commands/deliveries/delivery.js";
import { LOGS_CHANNEL } from "../../commands/subscriptions/subscription.js";
import type { DeliveriesReadModel } from "../readModels/deliveries.js";
import type { EmittedEventsReadModel } from "../readModels/emittedEvents.js";
import type { RunLogsReadModel } from "../readModels/runLogs.js";
import { eventSummary, logSummary } from "../readModels/summaries.js";
import type { Clock } from "../ids.js";
import { DELIVERIES_TOPIC, deliveryMessage } from "./messages.js";

export class Resends {
  constructor(
    private readonly deps: {
      readonly bus: Bus;
      readonly deliveries: DeliveriesReadModel;
      readonly events: EmittedEventsReadModel;
      readonly runLogs: RunLogsReadModel;
      readonly clock: Clock;
    },
  ) {}

  /** Queues the delivery again for its listener; false when it, or its event, is not known any more. */
  async resend(listenerId: string, deliveryId: string): Promise<boolean> {
    const attempt = this.deps.deliveries.lastAttempt(listenerId, deliveryId);
    if (!attempt) return false;
    let payload: unknown;
    if (attempt.channel === LOGS_CHANNEL) {
      const log = this.deps.runLogs.log(attempt.emitterId, attempt.eventId);
      payload = log && logSummary(log);
    } else {
      const event = this.deps.events.event(attempt.emitterId, attempt.eventId);
      payload = event && eventSummary(event, true);
    }
    if (payload === undefined) return false;
    const now = this.deps.clock.now();
    const delivery: Delivery = {
      id: deliveryId,
      listenerId,
      subscriptionId: attempt.subscriptionId,
      emitterId: attempt.emitterId,
      channel: attempt.channel,
      eventId: attempt.eventId,
      payload,
      chain: [],
      routedAt: now,
      resend: now,
      priorAttempts: attempt.attempt,
    };
    await this.deps.bus.publish(DELIVERIES_TOPIC, [deliveryMessage(delivery)]);
    return true;
  }
}
