// What travels on the deliveries topic (keyed by listener id): a delivery to make, or a kick that
// tells the listener's owner to look at its queue (a retry is due).
import type { OutgoingMessage, BusRecord } from "../bus/bus.js";
import type { Delivery } from "../../commands/deliveries/delivery.js";
import { parseJson } from "../json/bounded.js";

export const DELIVERIES_TOPIC = "headwater.deliveries";
export const DELIVERY_PARTITIONS = 16;

export type DeliveryMessage =
  { readonly kind: "delivery"; readonly delivery: Delivery } | { readonly kind: "kick"; readonly listenerId: string };

export const deliveryMessage = (delivery: Delivery): OutgoingMessage => ({
  key: delivery.listenerId,
  value: JSON.stringify({ kind: "delivery", delivery } satisfies DeliveryMessage),
});

export const kickMessage = (listenerId: string): OutgoingMessage => ({
  key: listenerId,
  value: JSON.stringify({ kind: "kick", listenerId } satisfies DeliveryMessage),
});

/** A record of the topic, or undefined when it cannot be read (it is then skipped, and said so). */
export function readDeliveryMessage(record: BusRecord): DeliveryMessage | undefined {
  try {
    // Payloads are events nested at most 128 levels, wrapped in the summary and the message.
    const message = parseJson(record.value.toString("utf8"), { maxDepth: 140 }) as DeliveryMessage;
    if (message?.kind === "kick" && typeof message.listenerId === "string") return message;
    if (message?.kind === "delivery" && typeof message.delivery?.id === "string" && typeof message.delivery.listenerId === "string")
      return message;
  } catch {
    // reported by the caller
  }
  return undefined;
}
