// Headwater's own equivalent of @pipedream/platform (not a copy of it): the pieces components use.
import axiosClient, { type AxiosRequestConfig } from "./axios.js";

export const DEFAULT_POLLING_SOURCE_TIMER_INTERVAL = 900;

export class ConfigurationError extends Error {
  override name = "ConfigurationError";
  exposeStack = false;
}

/** axios($, config): the response data, or the whole response with returnFullResponse. */
export async function axios($: unknown, config: AxiosRequestConfig & { returnFullResponse?: boolean; debug?: boolean }): Promise<unknown> {
  void $;
  const { returnFullResponse, debug, ...rest } = config ?? {};
  void debug;
  const response = await axiosClient.request(rest);
  return returnFullResponse ? response : response.data;
}

export function jsonStringifySafe(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === "object" && v !== null) {
      if (seen.has(v)) return "[Circular]";
      seen.add(v);
    }
    return v;
  });
}

export default { axios, ConfigurationError, DEFAULT_POLLING_SOURCE_TIMER_INTERVAL, jsonStringifySafe };
