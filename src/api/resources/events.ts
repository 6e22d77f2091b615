import { Type } from "@sinclair/typebox";
import { route, type Route } from "../route.js";
import type { ApiDeps } from "../deps.js";
import { Data, Paged, aliasedLimit, pageBody } from "../pagination.js";
import { visibleSource } from "./sources.js";
import { eventSummary, logSummary, logView } from "../../readModels/summaries.js";
import { newId } from "../../ids.js";
import { notFound } from "../../../commands/decider.js";

export const EventSummary = Type.Object(
  {
    id: Type.String({ description: "<epoch ms>-<sequence>, ordered by time" }),
    indexed_at_ms: Type.Integer(),
    event: Type.Unknown({ description: "the emitted data; over 1 KB and without expand=event: {$truncated, bytes, preview}" }),
    metadata: Type.Object({
      emit_id: Type.Union([Type.String(), Type.Null()]),
      name: Type.String({ description: "channel; empty for the default channel" }),
      emitter_id: Type.String(),
      summary: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { $id: "EventSummary" },
);

export const LogLine = Type.Object({ ts: Type.Integer(), level: Type.String(), message: Type.String() }, { $id: "LogLine" });

export const RunLog = Type.Object(
  {
    id: Type.String({ description: "the invocation id" }),
    trigger: Type.String({ description: "http, timer, manual, deploy, activate or deactivate" }),
    started_at_ms: Type.Integer(),
    ended_at_ms: Type.Integer(),
    compute_ms: Type.Integer(),
    ok: Type.Boolean(),
    error: Type.Union([Type.Object({ name: Type.String(), message: Type.String(), stack: Type.Optional(Type.String()) }), Type.Null()]),
    lines: Type.Array(LogLine),
  },
  { $id: "RunLog" },
);

export const RunOutcome = Type.Object(
  {
    invocation_id: Type.String(),
    ok: Type.Union([Type.Boolean(), Type.Null()]),
    error: Type.Union([Type.Object({ name: Type.String(), message: Type.String(), code: Type.Optional(Type.String()) }), Type.Null()]),
    emitted: Type.Array(Type.Object({ id: Type.String(), channel: Type.String() })),
    logs: Type.Array(LogLine),
    response: Type.Union([
      Type.Object({ status: Type.Integer(), headers: Type.Record(Type.String(), Type.Unknown()), body: Type.Unknown() }),
      Type.Null(),
    ]),
  },
  { $id: "RunOutcome" },
);

const EVENT_ID = Type.String({ pattern: "^[0-9]{1,16}-[0-9]{1,9}$" });
const SOURCE_ID = Type.String({ maxLength: 100, description: "dc_ id" });

export function eventRoutes(
  deps: Pick<
    ApiDeps,
    "access" | "sources" | "events" | "runLogs" | "emitters" | "admission" | "invocations" | "projector" | "clock" | "settings"
  >,
): Route[] {
  return [
    route({
      method: "GET",
      path: "/sources/{id}/event_summaries",
      operationId: "listSourceEvents",
      summary: "The source's most recent events (at most the last 100 are kept), newest first",
      tag: "events",
      params: { id: SOURCE_ID },
      paginated: true,
      query: {
        n: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "alias of limit" })),
        expand: Type.Optional(Type.Literal("event", { description: "event: full event data" })),
        event_name: Type.Optional(
          Type.String({ maxLength: 200, description: "one channel only: empty for the default channel, $errors, $logs, or a name" }),
        ),
      },
      fields: Object.keys(EventSummary.properties),
      errors: ["not_found"],
      response: { description: "a page of event summaries", schema: Paged(EventSummary) },
      handle({ caller, params, query, page, ctx }) {
        const source = visibleSource(deps, caller, params.id);
        const request = { ...page, limit: aliasedLimit(query.n, ctx.query.limit, page) };
        if (query.event_name === "$logs") return { body: pageBody(deps.runLogs.logs(source.id, request), logSummary) };
        const events = deps.events.events(source.id, request, query.event_name);
        return { body: pageBody(events, (e) => eventSummary(e, query.expand === "event")) };
      },
    }),
    route({
      method: "DELETE",
      path: "/sources/{id}/events",
      operationId: "deleteSourceEvents",
      summary: "Delete events: all; from start_id on; up to end_id; or the inclusive range (asynchronous)",
      tag: "events",
      params: { id: SOURCE_ID },
      query: { start_id: Type.Optional(EVENT_ID), end_id: Type.Optional(EVENT_ID) },
      errors: ["not_found"],
      response: {
        status: 202,
        description: "accepted: the events disappear from listings shortly",
        schema: Type.Object({ accepted: Type.Literal(true) }),
      },
      async handle({ caller, params, query }) {
        const source = visibleSource(deps, caller, params.id);
        // Appended now (durable), projected shortly after: the 202 does not wait for the read model.
        await deps.emitters.deleteEvents(
          { emitterId: source.id, startId: query.start_id ?? null, endId: query.end_id ?? null, at: deps.clock.now() },
          { metadata: { by: caller.userId } },
        );
        return { status: 202, body: { accepted: true } };
      },
    }),
    route({
      method: "GET",
      path: "/sources/{id}/logs",
      operationId: "listSourceLogs",
      summary: "The source's most recent runs with their console output (last 100 kept), newest first (extension)",
      tag: "events",
      params: { id: SOURCE_ID },
      paginated: true,
      fields: Object.keys(RunLog.properties),
      errors: ["not_found"],
      response: { description: "a page of run logs", schema: Paged(RunLog) },
      handle: ({ caller, params, page }) => ({
        body: pageBody(deps.runLogs.logs(visibleSource(deps, caller, params.id).id, page), logView),
      }),
    }),
    route({
      method: "POST",
      path: "/sources/{id}/run",
      operationId: "runSource",
      summary: "Run the source once now, with an optional event, and answer with the outcome (extension)",
      tag: "events",
      params: { id: SOURCE_ID },
      body: { event: Type.Optional(Type.Unknown({ description: "the event run() receives; default {manual: true, timestamp}" })) },
      errors: ["not_found", "quota_exceeded", "backlog_full", "run_timeout"],
      response: { description: "the run's outcome: ok, error, emitted event ids, logs, custom response", schema: Data(RunOutcome) },
      async handle({ caller, params, body }) {
        const source = visibleSource(deps, caller, params.id);
        const invocationId = newId("inv");
        const event = body.event ?? { manual: true, timestamp: Math.floor(deps.clock.now() / 1000) };
        deps.admission.admit({ invocationId, sourceId: source.id, ownerId: source.creatorId, bytes: JSON.stringify(event).length + 1024 });
        const reply = await deps.admission.during(
          invocationId,
          deps.invocations.submitAndWait(
            {
              invocationId,
              sourceId: source.id,
              trigger: "manual",
              event,
              minPosition: deps.projector.position,
              enqueuedMs: deps.clock.now(),
              uniqueToRecord: true,
            },
            deps.settings.runWaitMs,
          ),
        );
        if (reply.status === "gone") throw notFound("source");
        if (reply.position !== undefined) await deps.projector.waitFor(reply.position);
        if (reply.status === "duplicate") {
          // Recorded by a runner that stopped before it answered (the bus redelivered the invocation to
          // another): the run happened once, and its log and events say how it went.
          await deps.projector.catchUp();
          const recorded = deps.runLogs.log(source.id, invocationId);
          if (recorded) {
            return {
              body: {
                data: {
                  invocation_id: invocationId,
                  ok: recorded.ok,
                  error: recorded.error ? { name: recorded.error.name, message: recorded.error.message } : null,
                  emitted: deps.events.emittedBy(source.id, invocationId),
                  logs: recorded.lines,
                  response: null,
                },
              },
            };
          }
        }
        return {
          body: {
            data: {
              invocation_id: invocationId,
              ok: reply.ok ?? null,
              error: reply.error ?? null,
              emitted: reply.emitted ?? [],
              logs: reply.logs ?? [],
              response: reply.response ?? null,
            },
          },
        };
      },
    }),
  ];
}
