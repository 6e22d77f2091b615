// The shapes clients see for events and run logs: the items of event_summaries, the SSE frames and
// the webhook payloads are all built here, so they cannot drift apart.
import type { EmittedEvent } from "./emittedEvents.js";
import type { RunLog } from "./runLogs.js";

/** Event data over this many bytes of JSON is shortened in listings unless expand=event. */
export const EVENT_PREVIEW_BYTES = 1024;

export function eventSummary(event: EmittedEvent, expand: boolean) {
  let data = event.event;
  if (!expand && event.eventBytes > EVENT_PREVIEW_BYTES) {
    // A documented, valid-JSON shortening: the first 1 KB of the event's JSON text, and its full size.
    const text = JSON.stringify(event.event);
    data = {
      $truncated: true,
      bytes: event.eventBytes,
      preview: Buffer.from(text, "utf8").subarray(0, EVENT_PREVIEW_BYTES).toString("utf8"),
    };
  }
  return {
    id: event.id,
    indexed_at_ms: event.indexedAtMs,
    event: data,
    metadata: { emit_id: event.emitId, name: event.channel, emitter_id: event.emitterId, summary: event.summary },
  };
}

export function logView(log: RunLog) {
  return {
    id: log.invocationId,
    trigger: log.trigger,
    started_at_ms: log.startedMs,
    ended_at_ms: log.endedMs,
    compute_ms: log.computeMs,
    ok: log.ok,
    error: log.error,
    lines: log.lines,
  };
}

/** A run log as an item of the $logs channel (event_summaries?event_name=$logs and its SSE stream). */
export function logSummary(log: RunLog) {
  return {
    id: log.invocationId,
    indexed_at_ms: log.endedMs,
    event: logView(log),
    metadata: { emit_id: null, name: "$logs", emitter_id: log.sourceId, summary: `${log.trigger} run ${log.ok ? "ok" : "failed"}` },
  };
}
