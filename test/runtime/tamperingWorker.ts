// A runner child for tests: the real worker, whose result messages are rewritten for invocations
// of sources named dc_tamper_<mode>_…, the way a buggy or compromised child might send them.
// Everything else passes through untouched.
// A static import: the real worker's message listener must exist before the first message.
import "../../src/runtime/sandbox/worker.js";

type Msg = Record<string, unknown>;

/** The messages one IPC write carried (several sent in one turn travel as one `many`; turnBatch.ts). */
const each = (m: unknown): Msg[] => {
  const one = m as Msg | null;
  return (one && one["type"] === "many" ? (one["messages"] as Msg[]) : [one]).filter((x): x is Msg => x !== null);
};

const sources = new Map<unknown, string>();
process.on("message", (m: unknown) => {
  for (const one of each(m)) if (one["type"] === "invoke") sources.set(one["id"], String(one["sourceId"]));
});

const realSend = process.send!.bind(process) as (msg: unknown) => boolean;

function rewrite(msg: Msg, mode: string): void {
  const outcome = msg["outcome"] as Msg;
  switch (mode) {
    case "garbage":
      realSend({ ...msg, outcome: { ...outcome, ok: "yes" } });
      return;
    case "deep": {
      // As deep as JSON.stringify in this process can go: the host must shrug it off.
      let deep: unknown = {};
      for (let i = 0; i < 3000; i++) deep = { deep };
      realSend({ type: "result", id: msg["id"], outcome: deep });
      return;
    }
    case "bigemit":
      realSend({
        ...msg,
        outcome: {
          ...outcome,
          emits: [
            { event: JSON.stringify({ ok: 1 }), meta: {} },
            { event: JSON.stringify({ x: "x".repeat(600 * 1024) }), meta: {} },
          ],
        },
      });
      return;
    case "deepemit":
      realSend({ ...msg, outcome: { ...outcome, emits: [{ event: `${"[".repeat(100_000)}${"]".repeat(100_000)}`, meta: {} }] } });
      return;
    case "badsend":
      realSend({
        ...msg,
        outcome: {
          ...outcome,
          sends: [
            JSON.stringify({ kind: "email", subject: "fine" }),
            JSON.stringify({ kind: "email", subject: "hi\r\nBcc: victim@example.com" }),
          ],
        },
      });
      return;
    case "manysends":
      realSend({
        ...msg,
        outcome: { ...outcome, sends: Array.from({ length: 17 }, () => JSON.stringify({ kind: "email", subject: "s" })) },
      });
      return;
    case "bigdb":
      realSend({ ...msg, outcome: { ...outcome, dbChanged: true, db: JSON.stringify({ k: "x".repeat(70_000) }) } });
      return;
    case "badcode":
      realSend({ ...msg, outcome: { ...outcome, ok: false, error: { name: "Error", message: "x", code: "ALL_GOOD" } } });
      return;
    case "inmany":
      // The result in one `many` with a pong and a malformed message after it: the host handles
      // each on its own, so the result is taken and the bad one counted alone.
      realSend({ type: "many", messages: [{ type: "pong", seq: 1 }, msg, { type: 42 }] });
      return;
    case "nonsense":
      // Three malformed messages in a row: the child is replaced.
      realSend("nonsense");
      realSend({ type: 42 });
      realSend({ type: "result", id: msg["id"], outcome: null });
      return;
    default:
      realSend(msg);
  }
}

function sendOne(m: Msg): void {
  const mode = m["type"] === "result" ? /^dc_tamper_([a-z]+)_/.exec(sources.get(m["id"]) ?? "")?.[1] : undefined;
  if (mode === undefined) realSend(m);
  else rewrite(m, mode);
}

// Each message of a `many` goes on its own here, so a rewritten one can be sent as the mode says.
(process as unknown as { send: (msg: unknown) => boolean }).send = (msg: unknown) => {
  for (const one of each(msg)) sendOne(one);
  return true;
};
