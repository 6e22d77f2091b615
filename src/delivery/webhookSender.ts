// One attempt of one delivery to a webhook: a signed JSON POST through the guarded outbound client
// (private addresses refused unless the operator allows them), no redirects followed, a timeout.
import { outboundRequest, OutboundError } from "../net/outbound.js";
import type { AttemptResult, Delivery } from "../../commands/deliveries/delivery.js";
import { signatureHeader } from "./signing.js";

export interface SendOptions {
  readonly timeoutMs: number;
  readonly allowPrivateNetworks: boolean;
  readonly userAgent: string;
}

/** The body a webhook receives, exactly what is signed. */
export const webhookBody = (delivery: Delivery): string => JSON.stringify(delivery.payload);

export async function sendToWebhook(
  url: string,
  secrets: readonly string[],
  delivery: Delivery,
  now: () => number,
  options: SendOptions,
): Promise<AttemptResult> {
  const body = webhookBody(delivery);
  const started = now();
  const timestamp = Math.floor(started / 1000);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": options.userAgent,
    "webhook-id": delivery.id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatureHeader(secrets, delivery.id, timestamp, body),
    "x-headwater-emitter-id": delivery.emitterId,
    "x-headwater-event-name": delivery.channel,
    "x-headwater-event-id": delivery.eventId,
    "x-headwater-subscription-id": delivery.subscriptionId,
  };
  try {
    const response = await outboundRequest(
      {
        url,
        method: "POST",
        headers,
        body,
        timeoutMs: options.timeoutMs,
        maxResponseBytes: 1024 * 1024,
        maxRedirects: 0,
        decompress: false,
        keepAlive: true,
      },
      { allowPrivateNetworks: options.allowPrivateNetworks },
    );
    const ok = response.status >= 200 && response.status < 300;
    return {
      deliveryId: delivery.id,
      ok,
      status: response.status,
      latencyMs: now() - started,
      error: ok ? null : `the receiver answered HTTP ${response.status}`,
      at: started,
    };
  } catch (error) {
    const code = error instanceof OutboundError ? `${error.code}: ` : "";
    return {
      deliveryId: delivery.id,
      ok: false,
      status: null,
      latencyMs: now() - started,
      error: `${code}${(error as Error).message}`.slice(0, 1000),
      at: started,
    };
  }
}
