import { createHash } from "node:crypto";
import { customAlphabet } from "nanoid";

// 40 base62 characters carry ~238 bits: a fast hash (SHA-256) is then as safe as a slow one,
// and lets every request authenticate with one indexed lookup.
const secret = customAlphabet("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 40);
const KEY_PATTERN = /^hw_[0-9A-Za-z]{40}$/;

export const generateApiKey = (): string => `hw_${secret()}`;

export const hashApiKey = (key: string): string => createHash("sha256").update(key).digest("hex");

/** The key's public id is derived from its hash, so revoking by key needs no lookup table. */
export const apiKeyId = (hash: string): string => `k_${hash.slice(0, 20)}`;

export const looksLikeApiKey = (value: string): boolean => KEY_PATTERN.test(value);
