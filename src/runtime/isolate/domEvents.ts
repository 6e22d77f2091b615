// DOMException, Event, EventTarget, CustomEvent and MessageEvent: the DOM event classes Node 20 has
// as globals (browser builds of packages extend them: stripe's worker build, AbortSignal users).
// Small, as the spec's plain (non-DOM) case: a target has no parent, so there is no capture or
// bubbling path; a listener that throws is reported as uncaught (as Node does), not to dispatchEvent.
import { reportUncaught } from "./timers.js";

/** The legacy codes of the DOMException names that have one (WebIDL), as Node's DOMException gives them. */
const LEGACY_CODES: Record<string, number> = {
  IndexSizeError: 1,
  HierarchyRequestError: 3,
  WrongDocumentError: 4,
  InvalidCharacterError: 5,
  NoModificationAllowedError: 7,
  NotFoundError: 8,
  NotSupportedError: 9,
  InUseAttributeError: 10,
  InvalidStateError: 11,
  SyntaxError: 12,
  InvalidModificationError: 13,
  NamespaceError: 14,
  InvalidAccessError: 15,
  TypeMismatchError: 17,
  SecurityError: 18,
  NetworkError: 19,
  AbortError: 20,
  URLMismatchError: 21,
  QuotaExceededError: 22,
  TimeoutError: 23,
  InvalidNodeTypeError: 24,
  DataCloneError: 25,
};

export class DOMException extends Error {
  readonly #name: string;
  constructor(message = "", options: string | { name?: string; cause?: unknown } = "Error") {
    const opts = typeof options === "object" && options !== null ? options : undefined;
    super(String(message), opts && "cause" in opts ? { cause: opts.cause } : undefined);
    this.#name = opts ? String(opts.name ?? "Error") : String(options);
  }
  // name is an accessor of the prototype, as in Node (Error's is a data property)
  override get name(): string {
    return this.#name;
  }
  get code(): number {
    return LEGACY_CODES[this.#name] ?? 0;
  }
}
Object.defineProperty(DOMException.prototype, Symbol.toStringTag, { value: "DOMException", configurable: true });
for (const [name, code] of Object.entries(LEGACY_CODES)) {
  const constant =
    name
      .replace(/Error$/, "")
      .replace(/([a-z])([A-Z])/g, "$1_$2")
      .toUpperCase() + "_ERR";
  Object.defineProperty(DOMException, constant, { value: code, enumerable: true });
  Object.defineProperty(DOMException.prototype, constant, { value: code, enumerable: true });
}

interface EventInit {
  bubbles?: boolean;
  cancelable?: boolean;
  composed?: boolean;
}

const timeOrigin = Date.now();

export class Event {
  static readonly NONE = 0;
  static readonly CAPTURING_PHASE = 1;
  static readonly AT_TARGET = 2;
  static readonly BUBBLING_PHASE = 3;
  readonly #type: string;
  readonly #bubbles: boolean;
  readonly #cancelable: boolean;
  readonly #composed: boolean;
  readonly #timeStamp = Date.now() - timeOrigin;
  #defaultPrevented = false;
  #inPassive = false;
  #stopped = false;
  #stoppedImmediate = false;
  #target: EventTarget | null = null;
  #currentTarget: EventTarget | null = null;
  constructor(type: string, init?: EventInit) {
    if (arguments.length === 0) throw new TypeError('The "type" argument must be specified');
    if (init !== undefined && init !== null && typeof init !== "object")
      throw new TypeError('The "options" argument must be of type object');
    this.#type = String(type);
    this.#bubbles = !!init?.bubbles;
    this.#cancelable = !!init?.cancelable;
    this.#composed = !!init?.composed;
  }
  get type(): string {
    return this.#type;
  }
  get bubbles(): boolean {
    return this.#bubbles;
  }
  get cancelable(): boolean {
    return this.#cancelable;
  }
  get composed(): boolean {
    return this.#composed;
  }
  get timeStamp(): number {
    return this.#timeStamp;
  }
  get isTrusted(): boolean {
    return false;
  }
  get defaultPrevented(): boolean {
    return this.#cancelable && this.#defaultPrevented;
  }
  get returnValue(): boolean {
    return !this.defaultPrevented;
  }
  get target(): EventTarget | null {
    return this.#target;
  }
  get currentTarget(): EventTarget | null {
    return this.#currentTarget;
  }
  get srcElement(): EventTarget | null {
    return this.#target;
  }
  get eventPhase(): number {
    return this.#currentTarget ? Event.AT_TARGET : Event.NONE;
  }
  get cancelBubble(): boolean {
    return this.#stopped;
  }
  set cancelBubble(value: boolean) {
    if (value) this.#stopped = true;
  }
  composedPath(): EventTarget[] {
    return this.#currentTarget ? [this.#currentTarget] : [];
  }
  preventDefault(): void {
    if (!this.#inPassive) this.#defaultPrevented = true;
  }
  stopPropagation(): void {
    this.#stopped = true;
  }
  stopImmediatePropagation(): void {
    this.#stopped = true;
    this.#stoppedImmediate = true;
  }
  /** @internal The dispatch state EventTarget sets; not reachable from outside the class pair. */
  static _dispatching(event: Event, target: EventTarget | null, current: EventTarget | null): void {
    if (target) event.#target = target;
    event.#currentTarget = current;
  }
  /** @internal */
  static _passive(event: Event, passive: boolean): void {
    event.#inPassive = passive;
  }
  /** @internal */
  static _stoppedImmediate(event: Event): boolean {
    return event.#stoppedImmediate;
  }
  /** @internal */
  static _isDispatching(event: Event): boolean {
    return event.#currentTarget !== null;
  }
}
Object.defineProperty(Event.prototype, Symbol.toStringTag, { value: "Event", configurable: true });
const { _dispatching: setDispatching, _passive: setPassive, _stoppedImmediate: stoppedImmediate, _isDispatching: isDispatching } = Event;
for (const internal of ["_dispatching", "_passive", "_stoppedImmediate", "_isDispatching"])
  delete (Event as unknown as Record<string, unknown>)[internal];

export class CustomEvent<T = unknown> extends Event {
  readonly #detail: T | null;
  constructor(type: string, init?: EventInit & { detail?: T }) {
    if (arguments.length === 0) throw new TypeError('The "type" argument must be specified');
    super(type, init);
    this.#detail = init?.detail ?? null;
  }
  get detail(): T | null {
    return this.#detail;
  }
}
Object.defineProperty(CustomEvent.prototype, Symbol.toStringTag, { value: "CustomEvent", configurable: true });

export class MessageEvent<T = unknown> extends Event {
  readonly #init: { data?: T; origin?: string; lastEventId?: string; source?: unknown; ports?: unknown[] };
  constructor(
    type: string,
    init: EventInit & { data?: T; origin?: string; lastEventId?: string; source?: unknown; ports?: unknown[] } = {},
  ) {
    if (arguments.length === 0) throw new TypeError('The "type" argument must be specified');
    super(type, init);
    this.#init = init ?? {};
  }
  get data(): T | null {
    return this.#init.data ?? null;
  }
  get origin(): string {
    return String(this.#init.origin ?? "");
  }
  get lastEventId(): string {
    return String(this.#init.lastEventId ?? "");
  }
  get source(): unknown {
    return this.#init.source ?? null;
  }
  get ports(): unknown[] {
    return [...(this.#init.ports ?? [])];
  }
}
Object.defineProperty(MessageEvent.prototype, Symbol.toStringTag, { value: "MessageEvent", configurable: true });

type Listener = ((event: Event) => unknown) | { handleEvent(event: Event): unknown };
interface Registration {
  listener: Listener;
  capture: boolean;
  once: boolean;
  passive: boolean;
  removed: boolean;
}

export class EventTarget {
  readonly #listeners = new Map<string, Registration[]>();
  addEventListener(
    type: string,
    listener: Listener | null | undefined,
    options?:
      | boolean
      | {
          capture?: boolean;
          once?: boolean;
          passive?: boolean;
          signal?: { aborted: boolean; addEventListener(type: string, fn: () => void, options?: { once?: boolean }): void };
        },
  ): void {
    if (arguments.length < 2) throw new TypeError('The "type" and "listener" arguments must be specified');
    if (listener === null || listener === undefined) return;
    const opts = typeof options === "object" && options !== null ? options : { capture: !!options };
    const signal = opts.signal;
    if (signal?.aborted) return;
    const key = String(type);
    const capture = !!opts.capture;
    const list = this.#listeners.get(key) ?? [];
    if (list.some((r) => r.listener === listener && r.capture === capture)) return;
    const registration = { listener, capture, once: !!opts.once, passive: !!opts.passive, removed: false };
    list.push(registration);
    this.#listeners.set(key, list);
    signal?.addEventListener("abort", () => this.removeEventListener(key, listener, { capture }), { once: true });
  }
  removeEventListener(type: string, listener: Listener | null | undefined, options?: boolean | { capture?: boolean }): void {
    const capture = typeof options === "object" && options !== null ? !!options.capture : !!options;
    const key = String(type);
    const list = this.#listeners.get(key);
    if (!list) return;
    const index = list.findIndex((r) => r.listener === listener && r.capture === capture);
    if (index < 0) return;
    list[index].removed = true;
    list.splice(index, 1);
    if (list.length === 0) this.#listeners.delete(key);
  }
  dispatchEvent(event: Event): boolean {
    if (!(event instanceof Event)) throw new TypeError('The "event" argument must be an instance of Event');
    if (isDispatching(event)) throw new DOMException("The event is already being dispatched", "InvalidStateError");
    setDispatching(event, this, this);
    try {
      for (const r of [...(this.#listeners.get(event.type) ?? [])]) {
        if (r.removed) continue;
        if (r.once) this.removeEventListener(event.type, r.listener, { capture: r.capture });
        setPassive(event, r.passive);
        try {
          const result = typeof r.listener === "function" ? r.listener.call(this, event) : r.listener.handleEvent(event);
          if (result !== null && typeof result === "object" && typeof (result as Promise<unknown>).then === "function") {
            (result as Promise<unknown>).then(undefined, reportUncaught);
          }
        } catch (err) {
          reportUncaught(err);
        }
        setPassive(event, false);
        if (stoppedImmediate(event)) break;
      }
    } finally {
      setDispatching(event, null, null);
    }
    return !event.defaultPrevented;
  }
}
Object.defineProperty(EventTarget.prototype, Symbol.toStringTag, { value: "EventTarget", configurable: true });
