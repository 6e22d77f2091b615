// Following a source's live stream: GET {host}/sources/{id}/sse with the Authorization header,
// through the `eventsource` client (it reconnects by itself and sends Last-Event-ID, so the
// server resumes exactly after the last message received). Runs until Ctrl-C.
import { EventSource, type FetchLike } from "eventsource";
import type { HeadwaterClient } from "./client.js";
import type { Output } from "./output.js";
import { CliError, EXIT } from "../failure.js";

export interface FollowOptions {
  /** ?event_name=… (undefined: every channel). */
  readonly eventName?: string;
  /** Resume after this id on the first connection (the newest one already printed). */
  readonly lastEventId?: string;
  /** Called for every message, in order. */
  readonly onMessage: (id: string, data: unknown) => void;
  /** Called once, when the first connection is open (from then on nothing new is missed). */
  readonly onOpen?: () => void;
}

/** Resolves when the stream ends for good (Ctrl-C: 0); rejects with a CliError when the server refuses it. */
export function follow(client: HeadwaterClient, sourceId: string, out: Output, options: FollowOptions): Promise<number> {
  const url = client.url(`/sources/${sourceId}/sse`, options.eventName !== undefined ? { event_name: options.eventName } : {}, false);
  let first = true;
  const authorized: FetchLike = (input, init) => {
    const headers: Record<string, string> = { ...init.headers, ...client.headers };
    // Later connections carry the Last-Event-ID the client saw last (eventsource sets it itself).
    if (first && options.lastEventId !== undefined && !("Last-Event-ID" in headers)) headers["Last-Event-ID"] = options.lastEventId;
    first = false;
    return fetch(input, { ...init, headers });
  };
  return new Promise<number>((resolve, reject) => {
    const source = new EventSource(url, { fetch: authorized });
    let connected = false;
    let reconnecting = false;
    const stop = (settle: () => void) => {
      source.close();
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      settle();
    };
    const onSignal = () => stop(() => resolve(EXIT.ok));
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);

    source.addEventListener("open", () => {
      if (reconnecting) out.note(out.e.dim("reconnected"));
      if (!connected) options.onOpen?.();
      connected = true;
      reconnecting = false;
    });
    source.addEventListener("message", (message: MessageEvent) => {
      let data: unknown;
      try {
        data = JSON.parse(message.data as string) as unknown;
      } catch {
        data = message.data as unknown;
      }
      options.onMessage(message.lastEventId, data);
    });
    source.addEventListener("end", (message: MessageEvent) => {
      let reason = "the stream ended";
      try {
        reason = (JSON.parse(message.data as string) as { reason?: string }).reason ?? reason;
      } catch {
        // keep the generic reason
      }
      if (reason === "access revoked") stop(() => reject(new CliError("unauthorized", "the stream ended: access revoked", EXIT.auth)));
      else if (reason === "source deleted")
        stop(() => reject(new CliError("not_found", "the stream ended: the source was deleted", EXIT.notFound)));
      else stop(() => reject(new CliError("unavailable", `the stream ended: ${reason}`)));
    });
    source.addEventListener("error", (error) => {
      if (source.readyState === EventSource.CLOSED) {
        // A non-200 answer is final for EventSource: say what it was.
        const status = error.code;
        const failure =
          status === 401
            ? new CliError("unauthorized", "the server refused the API key for the event stream: run `headwater login`", EXIT.auth)
            : status === 404
              ? new CliError("not_found", `source ${sourceId} not found (or no longer visible)`, EXIT.notFound)
              : new CliError(
                  "unavailable",
                  `the event stream failed: ${error.message ?? `HTTP ${status}`}`,
                  status ? EXIT.failure : EXIT.unreachable,
                );
        stop(() => reject(failure));
        return;
      }
      // Connection lost (or never made): eventsource tries again and resumes with Last-Event-ID.
      if (!reconnecting)
        out.note(out.e.yellow(connected ? "connection lost, reconnecting…" : `cannot reach ${client.connection.apiUrl}, retrying…`));
      reconnecting = true;
    });
  });
}
