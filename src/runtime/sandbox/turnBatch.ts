// The IPC channel between the host and a runner child costs a system call per message sent, and
// a wake-up of the other side per write; on a virtual machine those dominate what a small message
// costs. With many sources, several invocations (and their answers) cross in one event-loop turn:
// measured with 16 busy sources, ~5 messages per turn each way. So each side queues what it sends
// in a turn and writes it once, at the end of the turn (setImmediate, as the group commits do):
// alone as it is, or several as one `{ type: "many", messages }`. The receiver takes them apart
// and handles each as if it had come alone, in order.
import { isRec, ProtocolError } from "./protocol.js";

/** Several messages written as one. */
export interface ManyMessages<M> {
  readonly type: "many";
  readonly messages: readonly M[];
}

/** Queues the messages of one event-loop turn and writes them with one `write` at its end. */
export class TurnBatchedSender<M> {
  #queue: M[] = [];
  #scheduled = false;

  constructor(private readonly write: (message: M | ManyMessages<M>) => void) {}

  send(message: M): void {
    this.#queue.push(message);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Writes what is queued now (also called at the end of the turn). */
  flush(): void {
    this.#scheduled = false;
    const queued = this.#queue;
    if (queued.length === 0) return;
    this.#queue = [];
    this.write(queued.length === 1 ? queued[0] : { type: "many", messages: queued });
  }
}

/** The messages one write carried, in order; throws ProtocolError for a malformed `many`. */
export function messagesOf(raw: unknown): readonly unknown[] {
  if (!isRec(raw) || raw["type"] !== "many") return [raw];
  const messages = raw["messages"];
  if (!Array.isArray(messages)) throw new ProtocolError("malformed many: messages must be an array", undefined);
  return messages;
}
