import type { ApiClient } from "../harness/server.js";

// Small polling helpers for the end-to-end source tests (timers, quotas, restart).

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until `probe` returns a value other than undefined, or fails with `what` after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : JSON.stringify(last)}` : ""}`);
    await sleep(everyMs);
  }
}

export interface EventSummary {
  id: string;
  indexed_at_ms: number;
  event: any;
  metadata: { name: string; emitter_id: string; summary: string | null; emit_id: string | null };
}

/** Every kept event of a source (at most the last 100), oldest first; `channel` as event_name. */
export async function events(client: ApiClient, sourceId: string, channel?: string): Promise<EventSummary[]> {
  const query = channel === undefined ? "" : `&event_name=${encodeURIComponent(channel)}`;
  const r = await client.get(`/v1/sources/${sourceId}/event_summaries?limit=100&expand=event${query}`);
  if (r.status !== 200) throw new Error(`event_summaries answered ${r.status}: ${JSON.stringify(r.body)}`);
  return (r.body.data as EventSummary[]).slice().reverse();
}

/** Deploys a source from code; fails the test on anything but 200. */
export async function deploy(client: ApiClient, code: string, configuredProps: Record<string, unknown> = {}, name?: string): Promise<any> {
  const r = await client.post("/v1/sources", { component_code: code, configured_props: configuredProps, ...(name ? { name } : {}) });
  if (r.status !== 200) throw new Error(`deploy answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** A source whose run emits the event it receives (timer events {timestamp, interval_seconds}). */
export const EMIT_TIMER_EVENT = `export default {
  name: "Timer echo",
  version: "0.0.1",
  props: { timer: { type: "$.interface.timer" } },
  async run(event) { this.$emit(event, { summary: "tick " + event.timestamp }); },
};`;

export async function me(client: ApiClient): Promise<any> {
  const r = await client.get("/v1/users/me");
  if (r.status !== 200) throw new Error(`users/me answered ${r.status}`);
  return r.body.data;
}
