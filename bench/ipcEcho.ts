// Baseline child for bench/runtime.ts: answers each message at once over the same kind of IPC
// channel (fork, JSON serialization) the runner children use.
process.on("message", (msg: { id: number; payload: string }) => {
  process.send?.({ type: "result", id: msg.id, outcome: { ok: true, length: msg.payload.length } });
});
process.on("disconnect", () => process.exit(0));
