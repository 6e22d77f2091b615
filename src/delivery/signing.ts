// Standard Webhooks signatures (https://www.standardwebhooks.com): secrets are "whsec_" + base64
// of random bytes; each signature is "v1," + base64 HMAC-SHA256 of "<id>.<timestamp>.<body>"
// keyed with the secret's bytes, several separated by spaces (during a secret rotation).
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";

export const generateSecret = (): string => PREFIX + randomBytes(32).toString("base64");

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
}

/** The webhook-signature header: one signature per secret in force. */
export const signatureHeader = (secrets: readonly string[], id: string, timestampSeconds: number, body: string): string =>
  secrets.map((secret) => sign(secret, id, timestampSeconds, body)).join(" ");
