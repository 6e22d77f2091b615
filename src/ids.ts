import { customAlphabet } from "nanoid";

// Identifiers follow the seed's prefixes (u_, o_, sc_, dc_, wh_, sub_, ...) over a lowercase
// alphanumeric body, long enough that guessing another user's id is hopeless.
const body = customAlphabet("0123456789abcdefghijklmnopqrstuvwxyz", 16);

export type IdPrefix = "u" | "o" | "sc" | "dc" | "p" | "wh" | "sub" | "d" | "c" | "inv" | "apn";

export const newId = (prefix: IdPrefix): string => `${prefix}_${body()}`;

/** The path segment of an HTTP endpoint (/e/<token>): 24 characters, unguessable, kept for the emitter's life. */
export const endpointToken = customAlphabet("0123456789abcdefghijklmnopqrstuvwxyz", 24);

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
