// Child for bench/ipcTurn.ts: answers every invocation over the same kind of IPC channel the runner
// children use (fork, JSON), one write per message, or the messages of a turn in one write
// (argv[2] === "turn", sandbox/turnBatch.ts). A "stats" message is answered with its CPU time.
import { messagesOf, TurnBatchedSender } from "../src/runtime/sandbox/turnBatch.js";

type Message = { type: string; id?: number; payload?: string };
const perTurn = process.argv[2] === "turn";
const sender = new TurnBatchedSender<unknown>((message) => process.send?.(message));
const send = (message: unknown): void => {
  if (perTurn) sender.send(message);
  else process.send?.(message);
};

process.on("message", (raw: unknown) => {
  for (const message of messagesOf(raw) as Message[]) {
    if (message.type === "stats") {
      const cpu = process.cpuUsage();
      process.send?.({ type: "stats", cpuUs: cpu.user + cpu.system });
      continue;
    }
    // As a run of the bench's component answers: its response, then its result.
    send({ type: "respond", id: message.id, response: { status: 200, headers: "{}", body: '{"success":true}', base64: false } });
    send({ type: "result", id: message.id, outcome: { ok: true, emits: [{ event: message.payload, meta: {} }] } });
  }
});
process.on("disconnect", () => process.exit(0));
