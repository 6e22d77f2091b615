// $.send.http / email / s3: each call is checked here (a clear TypeError or SendLimitError at the
// call site) and recorded with the runner child, which checks it again and decides. Nothing is sent
// from the sandbox: the caller of the run performs the recorded sends (src/destinations) once the
// run is over. $.send.sse is an emit on a channel, since live streams are fed from emitted events.
import { MAX_JSON_DEPTH } from "../../json/bounded.js";
import { deeperThan, MAX_SEND_BYTES, MAX_SENDS_PER_RUN, mayExceedBytes, normalizeSend, utf8Bytes } from "../rules.js";
import { host } from "./bridge.js";
import { emit } from "./emit.js";
import { current } from "./invocationState.js";
import { LimitError } from "./limitError.js";
import { ArrayIsArray, stringify } from "./primordials.js";

export class SendLimitError extends LimitError {
  override name = "SendLimitError";
}

function record(kind: "http" | "email" | "s3", config: unknown): void {
  const s = current();
  const checked = normalizeSend(kind, config);
  if (!checked.ok) throw new TypeError(checked.message);
  if (s.sends >= MAX_SENDS_PER_RUN) {
    throw new SendLimitError(`$.send.${kind}: at most ${MAX_SENDS_PER_RUN} sends (http, email, s3 together) may be made per run`);
  }
  let json: string | undefined;
  try {
    json = stringify(checked.value);
  } catch (err) {
    if (err instanceof RangeError) throw new SendLimitError(`$.send.${kind}: the value is nested too deeply to serialize as JSON`);
    throw new TypeError(`$.send.${kind}: the value is not JSON-serializable: ${(err as Error).message}`);
  }
  if (typeof json !== "string") throw new TypeError(`$.send.${kind}: the value has no JSON form`);
  if (json.length > MAX_SEND_BYTES || (mayExceedBytes(json.length, MAX_SEND_BYTES) && utf8Bytes(json) > MAX_SEND_BYTES)) {
    throw new SendLimitError(`$.send.${kind}: ${utf8Bytes(json)} bytes of JSON, over the limit of ${MAX_SEND_BYTES} bytes per send`);
  }
  if (deeperThan(json, MAX_JSON_DEPTH))
    throw new SendLimitError(`$.send.${kind}: the value is nested deeper than ${MAX_JSON_DEPTH} levels`);
  s.sends++;
  host().send(json);
}

/** $.send for one action run. */
export function makeSend(): Record<string, (config?: unknown) => void> {
  return {
    http: (config) => record("http", config),
    email: (config) => record("email", config),
    s3: (config) => record("s3", config),
    // Pipedream's $.send.emit({ raw_event, name }).
    emit: (config) => {
      const c = (typeof config === "object" && config !== null && !ArrayIsArray(config) ? config : {}) as Record<string, unknown>;
      const name = c["name"];
      emit(c["raw_event"], name !== undefined && name !== null && name !== "" ? { name } : {});
    },
    // An emit of `payload` on the channel `channel`: the channel's SSE stream shows it.
    sse: (config) => {
      if (typeof config !== "object" || config === null || ArrayIsArray(config))
        throw new TypeError("$.send.sse expects an object { channel, payload }");
      const c = config as Record<string, unknown>;
      const channel = c["channel"];
      if (typeof channel !== "string" || channel === "") throw new TypeError("$.send.sse: channel must be a non-empty string");
      emit(c["payload"], { name: channel });
    },
  };
}
