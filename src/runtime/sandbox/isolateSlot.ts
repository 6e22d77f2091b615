// One isolate in a runner child: its context, the host side of the bridge, and the bookkeeping of
// the invocation it is serving. A slot is warm state for exactly one source of one owner.
import ivm from "isolated-vm";
import { outboundRequest, OutboundError } from "../../net/outbound.js";
import type { SandboxLimits } from "../config.js";
import type { Emit, HttpResponse, LogLine } from "../types.js";
import { hostOperation } from "./hostOperations.js";

export interface SlotEnv {
  limits: SandboxLimits;
  allowPrivateNetworks: boolean;
  prelude: string;
}

/** What the host side collects while one invocation runs. */
export class InvocationRecord {
  emits: Emit[] = [];
  logs: LogLine[] = [];
  logBytes = 0;
  hostDroppedLogs = 0;
  response: HttpResponse | undefined;
  violation: string | undefined;
  timedOut = false;
  constructor(
    readonly id: number,
    readonly deadline: number,
    readonly onLog: (line: LogLine) => void,
    readonly onRespond: (response: HttpResponse) => void,
  ) {}
}

let preludeCache: ivm.ExternalCopy<ArrayBuffer> | undefined;
const bundleCache = new Map<string, ivm.ExternalCopy<ArrayBuffer>>();
const MAX_CODE_CACHE = 256;

function producedCache(script: ivm.Script): ivm.ExternalCopy<ArrayBuffer> | undefined {
  return (script as unknown as { cachedData?: ivm.ExternalCopy<ArrayBuffer> }).cachedData;
}

const LEVELS = new Set(["log", "info", "warn", "error", "debug"]);
const MAX_TIMERS = 10_000;

export class IsolateSlot {
  readonly isolate: ivm.Isolate;
  context: ivm.Context | undefined;
  private invokeRef: ivm.Reference<(payload: string) => Promise<string>> | undefined;
  private dispatchRef: ivm.Reference<(kind: string, id: number, payload: unknown) => void> | undefined;
  private loadRef: ivm.Reference<() => string> | undefined;
  current: InvocationRecord | undefined;
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private httpActive = 0;
  private readonly httpWaiting: (() => void)[] = [];
  disposed = false;
  lastUsed = Date.now();

  constructor(
    readonly key: string,
    readonly bundleKey: string,
    readonly memoryMb: number,
    private readonly env: SlotEnv,
  ) {
    this.isolate = new ivm.Isolate({
      memoryLimit: memoryMb,
      onCatastrophicError: (message) => {
        // V8 lost control of the isolate: the process cannot be trusted any more.
        process.stderr.write(`headwater runner: catastrophic isolate error: ${message}\n`);
        process.abort();
      },
    });
  }

  /** Sets up the context, runs the prelude and the bundle, and loads the component. */
  async init(bundle: string): Promise<{ ok: boolean; describe?: unknown; error?: { name: string; message: string; stack?: string; code: string } }> {
    const context = await this.isolate.createContext();
    this.context = context;
    const g = context.global;
    g.setSync("__hw_bridge_log", new ivm.Callback((level: unknown, message: unknown) => this.onLog(level, message), { ignored: true }));
    g.setSync("__hw_bridge_emit", new ivm.Callback((event: unknown, meta: unknown) => this.onEmit(event, meta), { ignored: true }));
    g.setSync("__hw_bridge_respond", new ivm.Callback((json: unknown) => this.onRespond(json), { ignored: true }));
    g.setSync("__hw_bridge_http", new ivm.Callback((id: unknown, req: unknown) => this.onHttp(id, req), { ignored: true }));
    g.setSync("__hw_bridge_timer", new ivm.Callback((op: unknown, id: unknown, ms: unknown) => this.onTimer(op, id, ms), { ignored: true }));
    g.setSync("__hw_bridge_sync", new ivm.Callback((op: unknown, args: unknown) => hostOperation(op, args), { sync: true }));
    const prelude = this.isolate.compileScriptSync(this.env.prelude, {
      filename: "headwater:prelude.js",
      ...(preludeCache ? { cachedData: preludeCache } : { produceCachedData: true }),
    });
    const preludeData = producedCache(prelude);
    if (!preludeCache && preludeData) preludeCache = preludeData;
    prelude.runSync(context);
    const entry = g.getSync("__hw_entry", { reference: true }) as ivm.Reference<Record<string, unknown>>;
    this.loadRef = entry.getSync("load", { reference: true }) as ivm.Reference<() => string>;
    this.invokeRef = entry.getSync("invoke", { reference: true }) as ivm.Reference<(payload: string) => Promise<string>>;
    this.dispatchRef = entry.getSync("dispatch", { reference: true }) as ivm.Reference<(k: string, i: number, p: unknown) => void>;
    entry.release();
    g.deleteSync("__hw_entry");
    const cached = bundleCache.get(this.bundleKey);
    const script = await this.isolate.compileScript(bundle, {
      filename: "component.js",
      ...(cached ? { cachedData: cached } : { produceCachedData: true }),
    });
    const produced = producedCache(script);
    if (!cached && produced) {
      if (bundleCache.size >= MAX_CODE_CACHE) bundleCache.delete(bundleCache.keys().next().value as string);
      bundleCache.set(this.bundleKey, produced);
    }
    await script.run(context, { release: true });
    const loaded = (await this.loadRef.apply(undefined, [], { result: { copy: true } })) as string;
    return JSON.parse(loaded);
  }

  async invoke(payload: string): Promise<string> {
    if (!this.invokeRef) throw new Error("slot not initialised");
    return (await this.invokeRef.apply(undefined, [payload], {
      arguments: { copy: true },
      result: { promise: true, copy: true },
    })) as string;
  }

  cpuTimeNs(): bigint {
    try {
      return this.isolate.cpuTime;
    } catch {
      return 0n;
    }
  }

  /** Ends the bookkeeping of the current invocation: timers stop, late HTTP answers are dropped. */
  endInvocation(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.current = undefined;
    this.lastUsed = Date.now();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    try {
      this.isolate.dispose();
    } catch {
      /* already disposed by V8 (memory limit) */
    }
  }

  private dispatch(kind: "timer" | "http", id: number, payload: unknown): void {
    if (this.disposed || !this.dispatchRef) return;
    this.dispatchRef.apply(undefined, [kind, id, payload], { arguments: { copy: true } }).catch(() => {
      /* the isolate went away meanwhile */
    });
  }

  private onLog(level: unknown, message: unknown): void {
    const rec = this.current;
    if (!rec || typeof message !== "string") return;
    const { maxLogLines, maxLogBytes, maxLogLineChars } = this.env.limits;
    // Defence in depth: the isolate already enforces these budgets.
    if (rec.logs.length >= maxLogLines || rec.logBytes + message.length > maxLogBytes + maxLogLineChars) {
      rec.hostDroppedLogs++;
      return;
    }
    const line: LogLine = { ts: Date.now(), level: (LEVELS.has(level as string) ? level : "log") as LogLine["level"], message: message.slice(0, maxLogLineChars + 64) };
    rec.logBytes += line.message.length;
    rec.logs.push(line);
    rec.onLog(line);
  }

  private onEmit(eventJson: unknown, metaJson: unknown): void {
    const rec = this.current;
    if (!rec) return;
    const { maxEmitBytes, maxEmitsPerRun } = this.env.limits;
    if (typeof eventJson !== "string" || typeof metaJson !== "string" || metaJson.length > 64 * 1024) {
      rec.violation ??= "$emit: malformed emit";
      return;
    }
    if (Buffer.byteLength(eventJson) > maxEmitBytes || rec.emits.length >= maxEmitsPerRun) {
      rec.violation ??= "$emit: emit limits exceeded";
      return;
    }
    try {
      rec.emits.push({ event: JSON.parse(eventJson), meta: JSON.parse(metaJson) });
    } catch {
      rec.violation ??= "$emit: malformed emit";
    }
  }

  private onRespond(json: unknown): void {
    const rec = this.current;
    if (!rec || rec.response || typeof json !== "string" || json.length > this.env.limits.maxResponseBytes * 2 + 65536) return;
    try {
      const r = JSON.parse(json) as HttpResponse;
      if (!Number.isInteger(r.status) || r.status < 100 || r.status > 599) return;
      rec.response = r;
      rec.onRespond(r);
    } catch {
      /* malformed: ignore */
    }
  }

  private onTimer(op: unknown, id: unknown, ms: unknown): void {
    if (!this.current || typeof id !== "number") return;
    const existing = this.timers.get(id);
    if (existing) clearTimeout(existing);
    this.timers.delete(id);
    if (op !== "set" || this.timers.size >= MAX_TIMERS) return;
    const delay = typeof ms === "number" && ms >= 0 ? Math.min(ms, 2 ** 31 - 1) : 0;
    this.timers.set(
      id,
      setTimeout(() => {
        this.timers.delete(id);
        this.dispatch("timer", id, null);
      }, delay),
    );
  }

  private onHttp(id: unknown, req: unknown): void {
    const rec = this.current;
    if (!rec || typeof id !== "number") return;
    void this.runHttp(rec, id, req);
  }

  private async runHttp(rec: InvocationRecord, id: number, req: unknown): Promise<void> {
    const limits = this.env.limits;
    const r = (typeof req === "object" && req !== null ? req : {}) as Record<string, unknown>;
    const answer = (payload: unknown) => {
      if (this.current === rec) this.dispatch("http", id, payload);
    };
    if (typeof r["url"] !== "string" || typeof r["method"] !== "string") {
      answer({ error: { code: "INVALID_URL", message: "request needs a method and a url" } });
      return;
    }
    const headers: Record<string, string | string[]> = {};
    if (typeof r["headers"] === "object" && r["headers"] !== null) {
      for (const [k, v] of Object.entries(r["headers"] as Record<string, unknown>)) {
        if (typeof v === "string") headers[k] = v;
        else if (Array.isArray(v)) headers[k] = v.map(String);
      }
    }
    const body = typeof r["body"] === "string" || r["body"] instanceof Uint8Array ? (r["body"] as string | Uint8Array) : undefined;
    const remaining = Math.max(1, rec.deadline - Date.now());
    const askedTimeout = typeof r["timeoutMs"] === "number" && r["timeoutMs"] > 0 ? r["timeoutMs"] : limits.httpTimeoutMs;
    const askedMax = typeof r["maxResponseBytes"] === "number" && r["maxResponseBytes"] > 0 ? r["maxResponseBytes"] : limits.httpMaxResponseBytes;
    if (this.httpActive >= limits.httpMaxConcurrent) await new Promise<void>((resolve) => this.httpWaiting.push(resolve));
    this.httpActive++;
    try {
      const res = await outboundRequest(
        {
          url: r["url"],
          method: r["method"],
          headers,
          ...(body !== undefined ? { body } : {}),
          timeoutMs: Math.min(askedTimeout, remaining),
          maxResponseBytes: Math.min(askedMax, limits.httpMaxResponseBytes),
          ...(typeof r["maxRedirects"] === "number" ? { maxRedirects: Math.max(0, Math.min(20, r["maxRedirects"])) } : {}),
        },
        { allowPrivateNetworks: this.env.allowPrivateNetworks },
      );
      answer({
        response: {
          status: res.status,
          statusText: res.statusText,
          headers: res.headers,
          body: new Uint8Array(res.body.buffer, res.body.byteOffset, res.body.byteLength),
          url: res.url,
          redirected: res.redirected,
        },
      });
    } catch (err) {
      const code = err instanceof OutboundError ? err.code : "NETWORK";
      answer({ error: { code, message: (err as Error).message } });
    } finally {
      this.httpActive--;
      this.httpWaiting.shift()?.();
    }
  }
}
