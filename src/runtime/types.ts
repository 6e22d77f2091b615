// Shapes exchanged between the runtime library and its callers (the lead's API, runner, registry).

export type ComponentType = "source" | "action";

export type PropType =
  | "app"
  | "boolean"
  | "integer"
  | "string"
  | "object"
  | "any"
  | "$.interface.http"
  | "$.interface.timer"
  | "$.service.db"
  | "alert"
  | "dir"
  | "http_request"
  | "boolean[]"
  | "integer[]"
  | "string[]"
  | "app[]";

export type PropOption = string | number | boolean | { label: string; value: unknown };

/** A prop after shorthand expansion and propDefinition resolution. */
export interface NormalizedProp {
  readonly name: string;
  readonly type: string;
  readonly label?: string;
  readonly description?: string;
  readonly optional: boolean;
  readonly default?: unknown;
  readonly secret: boolean;
  readonly min?: number;
  readonly max?: number;
  /** Static options; "dynamic" when options is an async method. */
  readonly options?: readonly PropOption[] | "dynamic";
  /** App name slug, for app props. */
  readonly app?: string;
  /** $.interface.http only. */
  readonly customResponse?: boolean;
  /** Its value decides what the component's additionalProps() adds. */
  readonly reloadProps?: boolean;
  /** The component gets `{ label, value }` rather than the value alone. */
  readonly withLabel?: boolean;
  /** Where the definition came from, when propDefinition was used. */
  readonly propDefinition?: { readonly app: string; readonly name: string };
}

/** One item of a component's configurable_props, in the seed's shape. */
export interface ConfigurableProp {
  name: string;
  type: string;
  label?: string;
  description?: string;
  default?: unknown;
  app?: string;
  optional?: boolean;
  secret?: boolean;
  min?: number;
  max?: number;
  options?: PropOption[];
  /** $.interface.http: the run answers the request (http.respond) rather than the platform at once. */
  customResponse?: boolean;
  /** The options come from the prop's options() method (listed through the prop options endpoint). */
  remoteOptions?: boolean;
  /** Its value decides what the component's additionalProps() adds (configure it, then those). */
  reloadProps?: boolean;
  /** The component gets `{ label, value }` (a plain value is given its option's label). */
  withLabel?: boolean;
}

export interface ComponentMeta {
  readonly name: string;
  readonly key?: string;
  readonly version: string;
  readonly type: ComponentType;
  readonly description?: string;
  readonly dedupe?: "unique" | "greatest" | "last";
  /** Hooks the component defines (deploy, activate, deactivate). */
  readonly hooks: readonly string[];
  readonly methods: readonly string[];
  /** False for a source that relies on the default run (emit the triggering event). */
  readonly hasRun: boolean;
  readonly props: readonly NormalizedProp[];
  /** The component has an additionalProps() method (actions: more props from the configured values). */
  readonly additionalProps?: boolean;
}

export interface PreparedComponent {
  /** SHA-256 hex of the code as given. */
  readonly codeHash: string;
  /** SHA-256 hex of the bundle; keys compiled-code caches. */
  readonly bundleHash: string;
  /** Script the isolate runs (an IIFE that defines the component). */
  readonly bundle: string;
  readonly meta: ComponentMeta;
  readonly configurableProps: ConfigurableProp[];
  /** npm packages bundled, with the exact versions used. */
  readonly packages: readonly { name: string; version: string }[];
  /** Relative or URL modules that were fetched and bundled. */
  readonly modules: readonly string[];
  /** "esm" or "cjs": how the entry exported the component. */
  readonly moduleFormat: "esm" | "cjs";
}

/**
 * "additionalProps" (actions): calls the component's additionalProps() and returns the props it
 * describes. "options": one page of a prop's options; the event is {prop, page, prevContext} and
 * the return value {options, context}.
 */
export type InvocationMethod = "run" | "deploy" | "activate" | "deactivate" | "additionalProps" | "options";

export interface HttpEvent {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string | string[]>;
  bodyRaw: string;
  body: unknown;
}

export interface TimerEvent {
  timestamp: number;
  interval_seconds: number;
}

/**
 * One entry of a run's /tmp as a workflow step hands it on to the next: a file with its bytes, or a
 * directory (no bytes). Paths are absolute and normalized, under /tmp.
 */
export interface TmpEntry {
  readonly path: string;
  readonly kind: "file" | "dir";
  /** A file's contents; empty for a directory. */
  readonly data: Uint8Array;
  readonly mtimeMs: number;
  readonly birthtimeMs: number;
}

export interface Invocation {
  readonly invocationId: string;
  readonly ownerId: string;
  readonly sourceId: string;
  readonly codeHash: string;
  /** Defaults to codeHash; give it when one code can have several bundles. */
  readonly bundleHash?: string;
  readonly bundle: string;
  readonly method: InvocationMethod;
  /** Configured values: app props as objects with $auth, secrets decrypted, timer as its value. */
  readonly props: Record<string, unknown>;
  readonly event?: unknown;
  /** The source's key-value snapshot (at most 60 KB, JSON nested at most 128 levels). */
  readonly db?: Record<string, unknown>;
  readonly http?: { readonly endpoint: string; readonly customResponse?: boolean };
  /** Sources: the props the source's additionalProps() added at deploy; the instance gets them like its own. */
  readonly additionalProps?: readonly NormalizedProp[];
  readonly limits?: { readonly timeoutMs?: number; readonly memoryMb?: number };
  /** Actions only: previous steps' exports, given to run as { steps }. */
  readonly steps?: Record<string, unknown>;
  /** Actions in a workflow: what the previous step left in /tmp, there before run() starts (64 MB of files at most). */
  readonly tmp?: readonly TmpEntry[];
  /** Actions in a workflow with a later step: answer what the run leaves in /tmp (`outcome.tmp`). */
  readonly keepTmp?: boolean;
  /**
   * A request run beside its source's long run, which may only answer: its outbound requests are
   * refused (`outcome.reachedOut`), and the caller judges its emits and db writes (SourceRunner.beside).
   */
  readonly answerOnly?: boolean;
}

export type HttpResponseBody = string | { base64: string } | null;

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: HttpResponseBody;
}

export interface LogLine {
  ts: number;
  level: "log" | "info" | "warn" | "error" | "debug" | "system";
  message: string;
}

export interface EmitMeta {
  id?: string | number;
  name?: string;
  summary?: string;
  ts?: number;
}

export interface Emit {
  event: unknown;
  meta: EmitMeta;
}

/**
 * A destination an action asked for with $.send.http / .email / .s3, as the trusted side accepted
 * it. The runtime only records sends; performing them is the caller's decision (src/destinations).
 */
export type Send =
  | { kind: "http"; method: string; url: string; headers: Record<string, string>; params?: Record<string, string>; data?: unknown }
  | { kind: "email"; subject: string; text?: string; html?: string }
  | { kind: "s3"; bucket: string; prefix: string; payload: unknown };

export interface InvocationError {
  name: string;
  message: string;
  stack?: string;
  /** Stable machine code: USER_ERROR, CONFIGURATION_ERROR, LOAD_ERROR, TIMEOUT, MEMORY_LIMIT, RUNNER_CRASHED, RUNNER_UNRESPONSIVE, LIMIT_EXCEEDED, ISOLATE_DISPOSED, SANDBOX_FAILED, SANDBOX_CORRUPTED, SANDBOX_PROTOCOL, RUNTIME_CLOSED (see src/runtime/README.md). */
  code: string;
}

export interface InvocationOutcome {
  ok: boolean;
  error?: InvocationError;
  /** Emits made before the run ended, also when it failed (as on Pipedream, emits are not rolled back). */
  emits: Emit[];
  logs: LogLine[];
  /** The snapshot after the run: every db.set the runner accepted, also when the run then failed. */
  db: Record<string, unknown>;
  dbChanged: boolean;
  response?: HttpResponse;
  /** Actions: what run returned (JSON) and the $.export values. */
  returnValue?: unknown;
  exports?: Record<string, unknown>;
  /** Actions: $.flow.exit(reason) was called. */
  exited?: { reason?: string };
  /** Actions: $.send.http/email/s3 calls, in order; like emits, also those made before a failure. */
  sends?: Send[];
  /** With keepTmp: what the run left in /tmp, when it succeeded and /tmp was not empty. */
  tmp?: TmpEntry[];
  /** With answerOnly: the run tried an outbound request, which was refused. */
  reachedOut?: boolean;
  cpuMs: number;
  wallMs: number;
  /** Whether a warm isolate served this invocation. */
  warm: boolean;
}

export interface InvocationCallbacks {
  onRespond?(response: HttpResponse): void;
  onLog?(line: LogLine): void;
}
