// MessageChannel and MessagePort as Node 20 has them as globals, within the one isolate: a message
// is a structured clone (the sandbox's structuredClone) delivered on a later turn (a 0 ms timer,
// so it ends with the run like any timer). Libraries use a channel as a macrotask queue.
import { EventTarget, MessageEvent } from "./domEvents.js";
import { reportUncaught } from "./timers.js";

type Handler = ((event: MessageEvent) => unknown) | null;

let linkPort: (a: MessagePort, b: MessagePort) => void;
const linkKey = Symbol("MessagePort");

export class MessagePort extends EventTarget {
  #other: MessagePort | null = null;
  #started = false;
  #closed = false;
  #queue: unknown[] = [];
  #onmessage: Handler = null;
  onmessageerror: Handler = null;
  constructor(key?: unknown) {
    super();
    if (key !== linkKey) throw new TypeError("Illegal constructor");
  }
  postMessage(message: unknown): void {
    if (arguments.length === 0) throw new TypeError('The "message" argument must be specified');
    const other = this.#other;
    if (this.#closed || !other) return;
    const clone = (globalThis as unknown as { structuredClone: (v: unknown) => unknown }).structuredClone(message);
    other.#queue.push(clone);
    other.#drain();
  }
  start(): void {
    this.#started = true;
    this.#drain();
  }
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const other = this.#other;
    this.#other = null;
    if (other) {
      other.#other = null;
      other.close();
    }
  }
  get onmessage(): Handler {
    return this.#onmessage;
  }
  set onmessage(fn: Handler) {
    this.#onmessage = typeof fn === "function" ? fn : null;
    if (this.#onmessage) this.start();
  }
  override addEventListener(...args: Parameters<EventTarget["addEventListener"]>): void {
    super.addEventListener(...args);
    if (args[0] === "message") this.start();
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  #drain(): void {
    if (!this.#started || this.#queue.length === 0) return;
    setTimeout(() => {
      if (this.#closed) return;
      const data = this.#queue.shift();
      const event = new MessageEvent("message", { data });
      if (this.#onmessage) {
        try {
          this.#onmessage.call(this, event);
        } catch (err) {
          reportUncaught(err);
        }
      }
      this.dispatchEvent(event);
    }, 0);
  }
  static {
    linkPort = (a, b) => {
      a.#other = b;
      b.#other = a;
    };
  }
}
Object.defineProperty(MessagePort.prototype, Symbol.toStringTag, { value: "MessagePort", configurable: true });

export class MessageChannel {
  readonly port1: MessagePort;
  readonly port2: MessagePort;
  constructor() {
    this.port1 = new MessagePort(linkKey);
    this.port2 = new MessagePort(linkKey);
    linkPort(this.port1, this.port2);
  }
}
Object.defineProperty(MessageChannel.prototype, Symbol.toStringTag, { value: "MessageChannel", configurable: true });
