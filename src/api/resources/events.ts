import type { Route } from "../route.js";
import type { Services } from "../services.js";
import { ApiError, invalid } from "../errors.js";
import { pageBody, pageInfoSchema } from "../pagination.js";
import { visibleSource } from "./sources.js";
import { emitterStream } from "../../../commands/emitters/emitter.js";
import { parseEventId } from "../../runner/eventIds.js";
import type { EmittedEventRow, RunLogRow } from "../../readModels/sources.js";
import { newId } from "../../ids.js";
import { submitted } from "../endpoints.js";

/** Event data over this many bytes of JSON is shortened in listings unless expand=event. */
export const EVENT_PREVIEW_BYTES = 1024;

export const eventSummarySchema = {
  type: "object",
  properties: {
    id: { type: "string", description: "<epoch ms>-<sequence>, ordered by time" },
    indexed_at_ms: { type: "integer" },
    event: { description: "the emitted data; over 1 KB and without expand=event: {$truncated, bytes, preview}" },
    metadata: {
      type: "object",
      properties: {
        emit_id: { type: ["string", "null"] },
        name: { type: "string", description: "channel; empty for the default channel" },
        emitter_id: { type: "string" },
        summary: { type: ["string", "null"] },
      },
    },
  },
};

export function eventSummary(row: EmittedEventRow, expand: boolean) {
  let event: unknown = JSON.parse(row.event);
  const bytes = Buffer.byteLength(row.event, "utf8");
  if (!expand && bytes > EVENT_PREVIEW_BYTES) {
    // A documented, valid-JSON shortening: the first 1 KB of the event's JSON text, and its full size.
    event = { $truncated: true, bytes, preview: Buffer.from(row.event, "utf8").subarray(0, EVENT_PREVIEW_BYTES).toString("utf8") };
  }
  return {
    id: row.id,
    indexed_at_ms: row.indexed_at_ms,
    event,
    metadata: { emit_id: row.emit_id, name: row.channel, emitter_id: row.emitter_id, summary: row.summary },
  };
}

export function logView(row: RunLogRow) {
  return {
    id: row.invocation_id,
    trigger: row.trigger,
    started_at_ms: row.started_ms,
    ended_at_ms: row.ended_ms,
    compute_ms: row.compute_ms,
    ok: row.ok === 1,
    error: row.error ? JSON.parse(row.error) : null,
    lines: JSON.parse(row.lines),
  };
}

/** A run log as an item of the $logs channel (event_summaries?event_name=$logs and its SSE stream). */
export function logSummary(log: RunLogRow) {
  return {
    id: log.invocation_id,
    indexed_at_ms: log.ended_ms,
    event: logView(log),
    metadata: { emit_id: null, name: "$logs", emitter_id: log.source_id, summary: `${log.trigger} run ${log.ok === 1 ? "ok" : "failed"}` },
  };
}

const eventIdSchema = { type: "string", pattern: "^[0-9]{1,16}-[0-9]{1,9}$" };

export function eventRoutes(services: Services): Route[] {
  return [
    {
      method: "GET",
      path: "/sources/{id}/event_summaries",
      operationId: "listSourceEvents",
      summary: "The source's most recent events (at most the last 100 are kept), newest first",
      tag: "events",
      params: { id: { type: "string", maxLength: 100 } },
      paginated: true,
      query: {
        n: { type: "integer", minimum: 1, maximum: 100, description: "alias of limit" },
        expand: { type: "string", enum: ["event"], description: "event: full event data" },
        event_name: { type: "string", maxLength: 200, description: "one channel only: empty for the default channel, $errors, $logs, or a name" },
      },
      fields: ["id", "indexed_at_ms", "event", "metadata"],
      response: {
        description: "a page of event summaries",
        schema: { type: "object", properties: { page_info: pageInfoSchema, data: { type: "array", items: eventSummarySchema } } },
      },
      handle({ caller, params, query, page }) {
        const row = visibleSource(services, caller, params.id as string);
        const request = { ...page, limit: (query.n as number | undefined) ?? page.limit };
        const channel = query.event_name as string | undefined;
        if (channel === "$logs") {
          const logs = services.sources.logs(row.id, request);
          return { body: pageBody(logs, logSummary) };
        }
        const events = services.sources.events(row.id, request, channel);
        return { body: pageBody(events, (e) => eventSummary(e, query.expand === "event")) };
      },
    },
    {
      method: "DELETE",
      path: "/sources/{id}/events",
      operationId: "deleteSourceEvents",
      summary: "Delete events: all; from start_id on; up to end_id; or the inclusive range (asynchronous)",
      tag: "events",
      params: { id: { type: "string", maxLength: 100 } },
      query: { start_id: eventIdSchema, end_id: eventIdSchema },
      response: { status: 202, description: "accepted: the events disappear from listings shortly" },
      async handle({ caller, params, query }) {
        const row = visibleSource(services, caller, params.id as string);
        const startId = (query.start_id as string | undefined) ?? null;
        const endId = (query.end_id as string | undefined) ?? null;
        if (startId && endId) {
          const a = parseEventId(startId)!;
          const b = parseEventId(endId)!;
          if (a.ms > b.ms || (a.ms === b.ms && a.seq > b.seq)) {
            throw invalid("start_id is after end_id", [{ path: "query.start_id", message: "must not be after end_id" }]);
          }
        }
        // Appended now (durable), projected shortly after: the 202 does not wait for the read model.
        await services.store.append(emitterStream(row.id), [
          { type: "EventsDeleted", data: { emitterId: row.id, startId, endId, at: services.clock.now() } },
        ]);
        return { status: 202, body: { accepted: true } };
      },
    },
    {
      method: "GET",
      path: "/sources/{id}/logs",
      operationId: "listSourceLogs",
      summary: "The source's most recent runs with their console output (last 100 kept), newest first (extension)",
      tag: "events",
      params: { id: { type: "string", maxLength: 100 } },
      paginated: true,
      response: { description: "a page of run logs" },
      handle({ caller, params, page }) {
        const row = visibleSource(services, caller, params.id as string);
        return { body: pageBody(services.sources.logs(row.id, page), logView) };
      },
    },
    {
      method: "POST",
      path: "/sources/{id}/run",
      operationId: "runSource",
      summary: "Run the source once now, with an optional event, and answer with the outcome (extension)",
      tag: "events",
      params: { id: { type: "string", maxLength: 100 } },
      body: { type: "object", properties: { event: {} }, additionalProperties: false },
      response: { description: "the run's outcome: ok, error, emitted event ids, logs, custom response" },
      async handle({ caller, params, body }) {
        const row = visibleSource(services, caller, params.id as string);
        const invocationId = newId("inv");
        const event = body.event ?? { manual: true, timestamp: Math.floor(services.clock.now() / 1000) };
        services.admission.admit({ invocationId, sourceId: row.id, ownerId: row.creator_id, bytes: JSON.stringify(event).length + 1024 });
        const reply = await submitted(services, invocationId, services.invocations.submitAndWait({
          invocationId,
          sourceId: row.id,
          trigger: "manual",
          event,
          minPosition: services.projector.position,
          enqueuedMs: services.clock.now(),
        }, services.runWaitMs));
        if (reply.status === "gone") throw new ApiError(404, "not_found", "source not found");
        if (reply.position !== undefined) await services.projector.waitFor(reply.position);
        return { body: { data: { invocation_id: invocationId, ok: reply.ok, error: reply.error ?? null, emitted: reply.emitted ?? [], logs: reply.logs ?? [], response: reply.response ?? null } } };
      },
    },
  ];
}
