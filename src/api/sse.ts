import type { ServerResponse } from "node:http";
import type { Route } from "./route.js";
import type { Services } from "./services.js";
import type { RecordedEvent } from "../store/eventStore.js";
import type { EventEmitted } from "../../commands/emitters/emitter.js";
import type { RunLogged } from "../../commands/emitters/runLog.js";
import { visibleSource } from "./resources/sources.js";
import { eventSummary, logView } from "./resources/events.js";

/** A client further behind than this is cut off rather than let it hold memory or stall others. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

interface Client {
  readonly emitterId: string;
  /** undefined: every channel. */
  readonly channel: string | undefined;
  readonly res: ServerResponse;
}

/**
 * Server-sent events fed by this node's projector: any node can serve any source's stream, and
 * an event is streamed once it is in the read models (so Last-Event-ID can resume from them).
 */
export class SseHub {
  readonly #clients = new Set<Client>();
  readonly #heartbeat: NodeJS.Timeout;

  constructor(services: Pick<Services, "projector">, heartbeatMs: number) {
    services.projector.onApplied((events) => this.#publish(events));
    this.#heartbeat = setInterval(() => {
      for (const client of this.#clients) this.#write(client, ": heartbeat\n\n");
    }, heartbeatMs);
    this.#heartbeat.unref();
  }

  add(client: Client): void {
    this.#clients.add(client);
    client.res.on("close", () => this.#clients.delete(client));
  }

  close(): void {
    clearInterval(this.#heartbeat);
    for (const client of this.#clients) client.res.end();
    this.#clients.clear();
  }

  static frame(id: string, data: unknown): string {
    return `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
  }

  #publish(events: readonly RecordedEvent[]): void {
    if (this.#clients.size === 0) return;
    for (const event of events) {
      if (event.type === "EventEmitted") {
        const d = event.data as EventEmitted["data"];
        const frame = SseHub.frame(d.id, eventSummary({
          emitter_id: d.emitterId, id: d.id, channel: d.channel, event: JSON.stringify(d.event), summary: d.summary,
          emit_id: d.emitId, ts: d.ts, indexed_at_ms: d.indexedAtMs, invocation_id: d.invocationId, seq: event.position,
        }, true));
        for (const client of this.#clients) {
          if (client.emitterId === d.emitterId && (client.channel === undefined || client.channel === d.channel)) this.#write(client, frame);
        }
      } else if (event.type === "RunLogged") {
        const d = event.data as RunLogged["data"];
        const frame = SseHub.frame(d.invocationId, logView({
          source_id: d.sourceId, invocation_id: d.invocationId, trigger: d.trigger, started_ms: d.startedMs, ended_ms: d.endedMs,
          compute_ms: d.computeMs, ok: d.ok ? 1 : 0, error: d.error ? JSON.stringify(d.error) : null, lines: JSON.stringify(d.lines), seq: event.position,
        }));
        for (const client of this.#clients) if (client.emitterId === d.sourceId && client.channel === "$logs") this.#write(client, frame);
      } else if (event.type === "SourceDeleted") {
        const id = (event.data as { id: string }).id;
        for (const client of this.#clients) {
          if (client.emitterId === id) {
            this.#write(client, "event: end\ndata: {\"reason\":\"source deleted\"}\n\n");
            client.res.end();
            this.#clients.delete(client);
          }
        }
      }
    }
  }

  #write(client: Client, text: string): void {
    if (client.res.writableLength > MAX_BUFFERED_BYTES) {
      this.#clients.delete(client);
      client.res.destroy();
      return;
    }
    client.res.write(text);
  }
}

export function sseRoutes(services: Services, hub: SseHub): Route[] {
  return [
    {
      method: "GET",
      path: "/sources/{id}/sse",
      unversioned: true,
      operationId: "streamSourceEvents",
      summary: "Server-sent events: each new event as `id: <event id>` and `data: <event summary JSON>`; Last-Event-ID resumes",
      tag: "events",
      params: { id: { type: "string", maxLength: 100 } },
      query: { event_name: { type: "string", maxLength: 200, description: "one channel only ($logs: run logs)" } },
      response: { description: "text/event-stream" },
      handle({ caller, params, query, ctx }) {
        const row = visibleSource(services, caller, params.id as string);
        const channel = query.event_name as string | undefined;
        const res = ctx.res;
        ctx.respond = false;
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache, no-transform",
          connection: "keep-alive",
          "x-accel-buffering": "no",
        });
        res.write(": connected\n\n");
        // Backlog and registration happen in one synchronous step, so no event falls between them.
        const lastEventId = ctx.get("last-event-id");
        if (lastEventId !== "" && channel !== "$logs") {
          const seq = services.sources.eventSeq(row.id, lastEventId) ?? 0;
          for (const e of services.sources.eventsAfter(row.id, seq)) {
            if (channel === undefined || e.channel === channel) res.write(SseHub.frame(e.id, eventSummary(e, true)));
          }
        }
        hub.add({ emitterId: row.id, channel, res });
        return {};
      },
    },
  ];
}
