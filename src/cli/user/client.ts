// A small typed client of the REST API v1 for the user CLI. Every failure becomes a CliError whose
// code is the server's (or `unavailable` when the server cannot be reached) and whose exit status
// tells scripts what happened (src/cli/failure.ts).
import { CliError, EXIT } from "../failure.js";
import type { Connection } from "./profile.js";

export type Query = Record<string, string | number | boolean | undefined>;

export interface PageInfo {
  total_count: number;
  count: number;
  start_cursor: string | null;
  end_cursor: string | null;
}

export interface Paged<T> {
  page_info: PageInfo;
  data: T[];
}

export interface SourceView {
  id: string;
  user_id?: string;
  component_id: string;
  configured_props: Record<string, unknown>;
  active: boolean;
  created_at: number;
  updated_at: number;
  name: string;
  name_slug: string;
}

export interface ComponentView {
  id: string;
  key: string | null;
  code: string;
  code_hash: string;
  name: string;
  version: string;
  description: string | null;
  configurable_props: { name: string; type: string; [k: string]: unknown }[];
  created_at: number;
  updated_at: number;
}

export interface EventSummary {
  id: string;
  indexed_at_ms: number;
  event: unknown;
  metadata: { emit_id: string | null; name: string; emitter_id: string; summary?: string | null };
}

export interface LogLine {
  ts: number;
  level: string;
  message: string;
}

export interface RunLog {
  id: string;
  trigger: string;
  started_at_ms: number;
  ended_at_ms: number;
  compute_ms: number;
  ok: boolean;
  error: { name: string; message: string; stack?: string } | null;
  lines: LogLine[];
}

export interface RunOutcome {
  invocation_id: string;
  ok: boolean | null;
  error: { name: string; message: string; code?: string } | null;
  emitted: { id: string; channel: string }[];
  logs: LogLine[];
  response: { status: number; headers: Record<string, unknown>; body: unknown } | null;
}

/** POST /components/{id}/run: an action run by hand. */
export interface ActionRunView {
  invocation_id: string;
  ok: boolean;
  return_value: unknown;
  exports: Record<string, unknown>;
  summary: unknown;
  logs: LogLine[];
  error: { name: string; message: string; code: string; stack?: string } | null;
  sends: { kind: string; ok: boolean; error?: string; detail?: Record<string, unknown> }[];
  exited: { reason: string | null } | null;
  emits: { event: unknown; name: string | null }[];
  response: { status: number; headers: Record<string, unknown>; body: unknown } | null;
}

export interface UserView {
  id: string;
  username: string;
  email: string;
  orgs: { name: string; id: string; orgname: string; email: string }[];
  daily_compute_time_quota?: number;
  daily_compute_time_used?: number;
  daily_invocations_quota?: number;
  daily_invocations_used?: number;
  billing_period_start_ts?: number;
  billing_period_end_ts?: number;
  billing_period_invocations?: number;
}

export interface WebhookView {
  id: string;
  user_id?: string;
  name: string | null;
  description: string | null;
  url: string;
  active: boolean;
  created_at: number;
  updated_at: number;
}

export interface SubscriptionView {
  id?: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
}

export interface RequestOptions {
  readonly query?: Query;
  readonly body?: unknown;
  /**
   * What to say when the server has no such route (a 404 that names no resource): an older
   * server that does not serve the endpoint yet.
   */
  readonly missingRoute?: string;
}

interface ErrorBody {
  error?: unknown;
  code?: unknown;
  details?: { path?: unknown; message?: unknown }[];
}

const USER_AGENT = "headwater-cli";

export class HeadwaterClient {
  constructor(
    readonly connection: Connection,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  /** `{api_url}/v1{path}?query` */
  url(path: string, query: Query = {}, versioned = true): string {
    const url = new URL(`${this.connection.apiUrl}${versioned ? "/v1" : ""}${path}`);
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, String(value));
    return url.href;
  }

  get headers(): Record<string, string> {
    return { authorization: `Bearer ${this.connection.apiKey}`, "user-agent": USER_AGENT };
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const url = this.url(path, options.query);
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers: { ...this.headers, ...(options.body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      });
    } catch (error) {
      throw unreachable(this.connection.apiUrl, error);
    }
    const text = await response.text().catch(() => "");
    let parsed: unknown;
    try {
      parsed = text === "" ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.ok) {
      // An empty success (204, or a 200 without a body) is fine; a body that is not JSON is not Headwater.
      if (text !== "" && parsed === undefined) {
        throw new CliError(
          "internal",
          `${method} ${url} answered ${response.status} without JSON: is ${this.connection.apiUrl} a Headwater server?`,
        );
      }
      return parsed as T;
    }
    throw httpError(method, url, response.status, parsed as ErrorBody | undefined, options.missingRoute);
  }

  get = <T>(path: string, query?: Query, missingRoute?: string) =>
    this.request<T>("GET", path, { ...(query ? { query } : {}), ...(missingRoute ? { missingRoute } : {}) });

  /** Every item of a paginated listing, following the cursors page after page. */
  async all<T>(path: string, query: Query = {}, missingRoute?: string): Promise<T[]> {
    const items: T[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.get<Paged<T>>(path, { ...query, limit: 100, after }, missingRoute);
      items.push(...page.data);
      const next = page.page_info?.end_cursor;
      if (page.data.length === 0 || !next || next === after || items.length >= page.page_info.total_count) return items;
      after = next;
    }
  }
}

/** A fetch that could not reach the server: the cause's code (ECONNREFUSED, ENOTFOUND, …) says why. */
export function unreachable(apiUrl: string, error: unknown): CliError {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const why = typeof cause?.code === "string" ? cause.code : typeof cause?.message === "string" ? cause.message : (error as Error).message;
  return new CliError("unavailable", `cannot reach the server at ${apiUrl} (${why})`, EXIT.unreachable);
}

export function httpError(method: string, url: string, status: number, body: ErrorBody | undefined, missingRoute?: string): CliError {
  const serverMessage = typeof body?.error === "string" ? body.error : `HTTP ${status}`;
  const details = Array.isArray(body?.details)
    ? body.details
        .filter((d) => typeof d?.message === "string")
        .map((d) => (typeof d.path === "string" ? `${d.path} ${String(d.message)}` : String(d.message)))
    : [];
  // The server's message is often its first problem: said once, with the others after it.
  const message =
    details.length === 0 || details.every((d) => serverMessage.includes(d))
      ? serverMessage
      : details.includes(serverMessage)
        ? details.join("; ")
        : `${serverMessage}: ${details.join("; ")}`;
  if (status === 401)
    return new CliError("unauthorized", `the server refused the API key (${message}): run \`headwater login\``, EXIT.auth);
  if (status === 404) {
    // Headwater answers an unknown route with "no route for …"; a resource it cannot find has a message of its own.
    if (missingRoute && (typeof body?.code !== "string" || /^no route for /.test(serverMessage))) {
      return new CliError("not_found", missingRoute, EXIT.notFound);
    }
    return new CliError("not_found", message, EXIT.notFound);
  }
  const code = typeof body?.code === "string" ? body.code : status >= 500 ? "internal" : "invalid_request";
  return new CliError(code, status >= 500 && !body?.error ? `${method} ${url} failed with HTTP ${status}` : message, EXIT.failure);
}
