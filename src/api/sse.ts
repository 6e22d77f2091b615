import type { ServerResponse } from "node:http";
import { Type } from "@sinclair/typebox";
import type { Context } from "koa";
import { route, type Caller, type Route } from "./route.js";
import type { ApiDeps } from "./deps.js";
import type { RecordedEvent } from "../store/eventStore.js";
import type { EventEmitted } from "../../commands/emitters/emitter.js";
import type { RunLogged } from "../../commands/runLogs/runLog.js";
import type { SourceDeleted } from "../../commands/sources/source.js";
import { emittedEventRow } from "../../projections/emittedEvents.js";
import { runLogRow } from "../../projections/runLogs.js";
import { toEmittedEvent } from "../readModels/emittedEvents.js";
import { toRunLog } from "../readModels/runLogs.js";
import { visibleSource } from "./resources/sources.js";
import { visibleWorkflow } from "./resources/workflows.js";
import { eventSummary, logSummary } from "../readModels/summaries.js";
import { Data } from "./pagination.js";

const StreamToken = Type.Object(
  {
    token: Type.String({ description: "st_…: single use, for this source only" }),
    expires_at: Type.Integer({ description: "epoch seconds; the stream must be opened before" }),
    url: Type.String({ description: "the SSE URL with the token (add &event_name=… for one channel)" }),
  },
  { $id: "StreamToken" },
);
import { log } from "../observability/log.js";

/** The channel name that streams run logs instead of emitted events. */
export const LOGS_CHANNEL = "$logs";
/** A client that takes no bytes across this many heartbeat periods is cut off (60 s by default). */
export const STALLED_HEARTBEATS = 4;
/** Kept items read per catch-up query; the client's socket buffer decides how many are written. */
const CATCH_UP_BATCH = 50;

export const sseFrame = (id: string, data: unknown): string => `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
const END_FRAME = `event: end\ndata: ${JSON.stringify({ reason: "source deleted" })}\n\n`;
const WORKFLOW_END_FRAME = `event: end\ndata: ${JSON.stringify({ reason: "workflow deleted" })}\n\n`;
const HEARTBEAT = ": heartbeat\n\n";
const REVOKED_FRAME = `event: end\ndata: ${JSON.stringify({ reason: "access revoked" })}\n\n`;

/** Frames of kept items after a log position, oldest first. */
export type CatchUp = (afterSeq: number, limit: number) => { seq: number; frame: string }[];

interface Client {
  readonly emitterId: string;
  /** undefined: every channel of emitted events; LOGS_CHANNEL: run logs. */
  readonly channel: string | undefined;
  readonly res: ServerResponse;
  readonly catchUp: CatchUp;
  /** $all position of the last item written to the client. */
  cursor: number;
  /** Its socket buffer is full: live items are skipped and read from the read models on 'drain'. */
  lagging: boolean;
  /** Heartbeat ticks passed while lagging without a 'drain'. */
  stalledTicks: number;
  /** Whether the caller may still read this stream (its key not revoked, the source still visible). */
  readonly allowed: () => boolean;
}

/**
 * Server-sent events fed by this node's projector: any node can serve any source's stream, and
 * an item is streamed once it is in the read models. A client whose socket cannot take more is
 * never waited for and never buffered for: it catches up from the kept items when it drains, like
 * a reconnect with Last-Event-ID, so its memory stays at one socket buffer.
 */
export class SseHub {
  readonly #byEmitter = new Map<string, Set<Client>>();
  readonly #heartbeat: NodeJS.Timeout;

  constructor(
    deps: Pick<ApiDeps, "projector">,
    private readonly heartbeatMs: number,
  ) {
    deps.projector.onApplied((events) => {
      // Called inside the projector's batch loop: a failure here must not stop projections.
      try {
        this.#publish(events);
      } catch (error) {
        log.error({ err: error }, "sse: publishing a batch failed");
      }
    });
    this.#heartbeat = setInterval(() => this.#beat(), heartbeatMs);
    this.#heartbeat.unref();
  }

  /**
   * Registers a stream that has read up to `cursor` and writes what it missed since. Callers
   * compute the cursor in the same synchronous step: the projector publishes right after each
   * commit, so nothing falls between the read models and the live tail, and nothing comes twice.
   */
  add(stream: Pick<Client, "emitterId" | "channel" | "res" | "catchUp" | "cursor" | "allowed">): void {
    const client: Client = { ...stream, lagging: false, stalledTicks: 0 };
    if (client.res.destroyed || client.res.writableEnded) return; // closed while the request was authenticated
    let clients = this.#byEmitter.get(client.emitterId);
    if (!clients) this.#byEmitter.set(client.emitterId, (clients = new Set()));
    clients.add(client);
    client.res.once("close", () => this.#remove(client));
    client.res.on("drain", () => this.#catchUpOrDrop(client));
    this.#catchUp(client);
  }

  /** From a 'drain' event, where a throw would be uncaught (e.g. the read models closing at shutdown). */
  #catchUpOrDrop(client: Client): void {
    try {
      this.#catchUp(client);
    } catch (error) {
      log.error({ err: error }, "sse: catching a client up failed");
      this.#remove(client);
      client.res.destroy();
    }
  }

  /** Open streams (all sources). */
  get size(): number {
    let n = 0;
    for (const clients of this.#byEmitter.values()) n += clients.size;
    return n;
  }

  close(): void {
    clearInterval(this.#heartbeat);
    for (const clients of this.#byEmitter.values()) for (const client of clients) client.res.end();
    this.#byEmitter.clear();
  }

  #publish(events: readonly RecordedEvent[]): void {
    if (this.#byEmitter.size === 0) return;
    for (const event of events) {
      if (event.type === "EventEmitted") {
        const clients = this.#byEmitter.get((event.data as EventEmitted["data"]).emitterId);
        if (!clients) continue;
        const emitted = toEmittedEvent(emittedEventRow(event));
        let frame: string | undefined;
        for (const client of clients) {
          if (client.channel === LOGS_CHANNEL || (client.channel !== undefined && client.channel !== emitted.channel)) continue;
          frame ??= sseFrame(emitted.id, eventSummary(emitted, true));
          this.#deliver(client, event.position, frame);
        }
      } else if (event.type === "RunLogged") {
        const clients = this.#byEmitter.get((event.data as RunLogged["data"]).sourceId);
        if (!clients) continue;
        let frame: string | undefined;
        for (const client of clients) {
          if (client.channel !== LOGS_CHANNEL) continue;
          if (frame === undefined) {
            const log = toRunLog(runLogRow(event));
            frame = sseFrame(log.invocationId, logSummary(log));
          }
          this.#deliver(client, event.position, frame);
        }
      } else if (event.type === "SourceDeleted" || event.type === "WorkflowDeleted") {
        const id = (event.data as SourceDeleted["data"]).id;
        const clients = this.#byEmitter.get(id);
        if (!clients) continue;
        this.#byEmitter.delete(id);
        for (const client of clients) this.#end(client.res, event.type === "WorkflowDeleted" ? WORKFLOW_END_FRAME : END_FRAME);
      } else if (event.type === "ApiKeyRevoked") {
        // At once, not at the next beat: nothing emitted after the revocation reaches its streams.
        this.#endRevoked();
      }
    }
  }

  /** Ends every stream whose caller may no longer read it (its key revoked, its source out of sight). */
  #endRevoked(): void {
    for (const clients of [...this.#byEmitter.values()]) {
      for (const client of [...clients]) {
        if (this.#gone(client) || client.allowed()) continue;
        this.#remove(client);
        client.res.end(REVOKED_FRAME);
      }
    }
  }

  #deliver(client: Client, position: number, frame: string): void {
    if (client.lagging || position <= client.cursor) return;
    if (this.#gone(client)) return;
    client.cursor = position;
    if (!client.res.write(frame)) client.lagging = true;
  }

  /** Writes kept items after the client's cursor until its socket is full or it has them all. */
  #catchUp(client: Client): void {
    if (this.#gone(client)) return;
    client.stalledTicks = 0;
    client.lagging = true;
    for (;;) {
      const items = client.catchUp(client.cursor, CATCH_UP_BATCH);
      for (const item of items) {
        client.cursor = item.seq;
        if (!client.res.write(item.frame)) return; // 'drain' resumes here
      }
      if (items.length < CATCH_UP_BATCH) break;
    }
    client.lagging = false;
  }

  #beat(): void {
    for (const clients of this.#byEmitter.values()) {
      for (const client of clients) {
        if (this.#gone(client)) continue;
        // A stream outlives its request's authentication: checked at every beat too (a revoked key
        // ends its streams at once, when the revocation is projected; see #publish).
        if (!client.allowed()) {
          this.#remove(client);
          client.res.end(REVOKED_FRAME);
          continue;
        }
        if (!client.lagging) {
          if (!client.res.write(HEARTBEAT)) client.lagging = true;
        } else if (++client.stalledTicks >= STALLED_HEARTBEATS) {
          this.#remove(client);
          client.res.destroy();
        }
      }
    }
  }

  /** Ends a stream after what it was already sent; one that never reads is dropped after the stall limit. */
  #end(res: ServerResponse, frame = END_FRAME): void {
    if (res.destroyed || res.writableEnded) return;
    res.end(frame);
    const timer = setTimeout(() => res.destroy(), STALLED_HEARTBEATS * this.heartbeatMs);
    timer.unref();
    res.once("close", () => clearTimeout(timer));
  }

  #gone(client: Client): boolean {
    if (!client.res.destroyed && !client.res.writableEnded) return false;
    this.#remove(client);
    return true;
  }

  #remove(client: Client): void {
    const clients = this.#byEmitter.get(client.emitterId);
    if (!clients) return;
    clients.delete(client);
    if (clients.size === 0) this.#byEmitter.delete(client.emitterId);
  }
}

/** Opens a stream on one emitter (a source or a workflow): catch-up from Last-Event-ID, then live frames. */
function openStream(
  deps: Pick<ApiDeps, "access" | "events" | "runLogs" | "accountsView" | "projector">,
  hub: SseHub,
  caller: Caller,
  emitter: { id: string; ownerId: string },
  query: { event_name?: string; last_event_id?: string },
  ctx: Context,
): void {
  const channel = query.event_name;
  const lastEventId = ctx.get("last-event-id") || (query.last_event_id ?? "");
  let catchUp: CatchUp;
  let cursor: number;
  if (channel === LOGS_CHANNEL) {
    catchUp = (after, limit) =>
      deps.runLogs.logsAfter(emitter.id, after, limit).map((l) => ({ seq: l.seq, frame: sseFrame(l.invocationId, logSummary(l)) }));
    cursor = lastEventId === "" ? deps.projector.position : deps.runLogs.cursorOf(emitter.id, lastEventId);
  } else {
    catchUp = (after, limit) =>
      deps.events.eventsAfter(emitter.id, after, channel, limit).map((e) => ({ seq: e.seq, frame: sseFrame(e.id, eventSummary(e, true)) }));
    cursor = lastEventId === "" ? deps.projector.position : deps.events.cursorOf(emitter.id, lastEventId);
  }
  const res = ctx.res;
  ctx.respond = false;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.write(": connected\n\n");
  const allowed = () => deps.accountsView.keyActive(caller.keyId) && deps.access.canSee(caller, emitter.ownerId);
  hub.add({ emitterId: emitter.id, channel, res, catchUp, cursor, allowed });
}

/** The query of every SSE route. */
const streamQuery = (kind: "sources" | "workflows") => ({
  event_name: Type.Optional(
    Type.String({
      maxLength: 200,
      description: "one channel only: empty for the default channel, a name, $errors, or $logs (run logs)",
    }),
  ),
  stream_token: Type.Optional(
    Type.String({
      maxLength: 1000,
      description: `instead of the Authorization header (browsers' EventSource cannot send one): a token from POST /v1/${kind}/{id}/stream_tokens, single use, valid 60 s`,
    }),
  ),
  last_event_id: Type.Optional(
    Type.String({
      maxLength: 100,
      description: "resume after this event id when the Last-Event-ID header cannot be sent (a new EventSource)",
    }),
  ),
});

const streamResponse = (what: string) => ({
  description: "a stream of server-sent events",
  contentType: "text/event-stream",
  schema: Type.String({
    description: `\`: connected\`, then per item \`id: <event id>\` + \`data: <EventSummary JSON, or a RunLog summary for $logs>\`; \`: heartbeat\` comments; \`event: end\` + \`data: {"reason"}\` when the ${what} is deleted or access is revoked`,
    examples: [
      ': connected\n\nid: 1718000000000-0\ndata: {"id":"1718000000000-0","indexed_at_ms":1718000000000,"event":{},"metadata":{}}\n\n',
    ],
  }),
});

export function sseRoutes(
  deps: Pick<
    ApiDeps,
    "access" | "sources" | "workflowsView" | "events" | "runLogs" | "accountsView" | "projector" | "streamTokens" | "publicUrl"
  >,
  hub: SseHub,
): Route[] {
  const tokenRoute = (kind: "sources" | "workflows") =>
    route({
      method: "POST",
      path: `/${kind}/{id}/stream_tokens`,
      operationId: kind === "sources" ? "createStreamToken" : "createWorkflowStreamToken",
      summary: `A token that opens this ${kind === "sources" ? "source" : "workflow"}'s SSE stream once without the Authorization header (for browsers' EventSource): use within 60 s as ?stream_token=`,
      tag: kind === "sources" ? "events" : "workflows",
      params: { id: Type.String({ maxLength: 100 }) },
      errors: ["not_found"],
      response: { description: "the token and the stream URL it opens", schema: Data(StreamToken) },
      handle({ caller, params }) {
        const emitter = kind === "sources" ? visibleSource(deps, caller, params.id) : visibleWorkflow(deps, caller, params.id);
        const { token, expiresAtMs } = deps.streamTokens.mint(caller, emitter.id);
        const url = `${deps.publicUrl()}/${kind}/${emitter.id}/sse?stream_token=${encodeURIComponent(token)}`;
        return { body: { data: { token, expires_at: Math.floor(expiresAtMs / 1000), url } } };
      },
    });
  return [
    tokenRoute("sources"),
    tokenRoute("workflows"),
    route({
      method: "GET",
      path: "/sources/{id}/sse",
      unversioned: true,
      operationId: "streamSourceEvents",
      summary:
        "Server-sent events: each new event as `id: <event id>` and `data: <event summary JSON>` (the items of event_summaries?expand=event); " +
        "Last-Event-ID resumes after that id from the kept events; `: heartbeat` comments keep idle streams open; `event: end` when the source is deleted",
      tag: "events",
      params: { id: Type.String({ maxLength: 100 }) },
      query: streamQuery("sources"),
      errors: ["not_found"],
      response: streamResponse("source"),
      handle({ caller, params, query, ctx }) {
        openStream(deps, hub, caller, visibleSource(deps, caller, params.id), query, ctx);
        return {};
      },
    }),
    route({
      method: "GET",
      path: "/workflows/{id}/sse",
      unversioned: true,
      operationId: "streamWorkflowEvents",
      summary:
        "Server-sent events of a workflow: its emits ({raw_event}), its $errors, or its run logs ($logs), framed as for sources; `event: end` when the workflow is deleted",
      tag: "workflows",
      params: { id: Type.String({ maxLength: 100 }) },
      query: streamQuery("workflows"),
      errors: ["not_found"],
      response: streamResponse("workflow"),
      handle({ caller, params, query, ctx }) {
        openStream(deps, hub, caller, visibleWorkflow(deps, caller, params.id), query, ctx);
        return {};
      },
    }),
  ];
}
