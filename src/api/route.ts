// One endpoint = one typed route: its TypeBox schemas validate the request (ajv), type the
// handler's inputs (Static<>) and describe it in the OpenAPI document; nothing is typed twice.
import type { Context } from "koa";
import type Router from "@koa/router";
import { Type, type Static, type TObject, type TProperties, type TSchema } from "@sinclair/typebox";
import { invalid } from "../../commands/decider.js";
import type { ErrorCode } from "../../commands/errors.js";
import { bodyValidator, paramsValidator, queryValidator } from "../validation.js";
import { pageQuery, pageRequest } from "./pagination.js";
import type { PageRequest } from "../readModels/page.js";

/** Who is calling, resolved from the bearer key by the auth middleware. */
export interface Caller {
  readonly userId: string;
  readonly keyId: string;
  readonly operator: boolean;
}

/** The seed's common parameters: query string for GET, body for POST/PUT. */
export const commonQuery = {
  include: Type.Optional(Type.String({ maxLength: 1000, description: "comma-separated response fields to include" })),
  exclude: Type.Optional(Type.String({ maxLength: 1000, description: "comma-separated response fields to exclude" })),
  org_id: Type.Optional(Type.String({ maxLength: 100, description: "the organization in which to act" })),
};
type Common = Static<TObject<typeof commonQuery>>;

/**
 * A parameter a client may send in the query string or in the JSON body. Both at once must agree:
 * a silent pick could act on another organization or resource than the one the client named.
 */
export function queryOrBody<T extends string>(name: string, query: T | undefined, body: T | undefined): T | undefined {
  if (query !== undefined && body !== undefined && query !== body) {
    throw invalid(`${name} is given in the query string and in the body with different values`, [
      { path: `query.${name}`, message: `differs from body.${name}` },
    ]);
  }
  return body ?? query;
}

export interface Request<Params, Query, Body> {
  readonly params: Params;
  readonly query: Query & Common;
  readonly body: Body & Common;
  /** The decoded page (paginated routes). */
  readonly page: PageRequest;
  readonly caller: Caller;
  readonly ctx: Context;
}

export interface Reply {
  readonly status?: number;
  readonly body?: unknown;
}

export interface ResponseSpec {
  readonly status?: number;
  readonly description: string;
  readonly schema?: TSchema;
  readonly contentType?: string;
}

/** An endpoint, as written: schemas as TypeBox properties, a handler typed by them. */
export interface RouteSpec<P extends TProperties, Q extends TProperties, B extends TProperties | undefined> {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** OpenAPI style (`/sources/{id}`), without the /v1 prefix. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag: string;
  /** Served without the /v1 prefix (the SSE stream lives on the bare host). */
  readonly unversioned?: boolean;
  /** No bearer key needed. */
  readonly public?: boolean;
  readonly params?: P;
  readonly query?: Q;
  /** A JSON object body with these properties (unknown ones refused). */
  readonly body?: B;
  readonly paginated?: boolean;
  /** Fields of `data` (or of its items) that include/exclude may name. */
  readonly fields?: readonly string[];
  readonly response: ResponseSpec;
  /** Other answers worth documenting besides the main one and the errors (e.g. /readyz's 503). */
  readonly responses?: Readonly<Record<number, ResponseSpec>>;
  /** Error codes this endpoint answers besides the ones every endpoint may (unauthorized, rate_limited, invalid_request). */
  readonly errors?: readonly ErrorCode[];
  handle(
    request: Request<Static<TObject<P>>, Static<TObject<Q>>, B extends TProperties ? Static<TObject<B>> : Record<never, never>>,
  ): Promise<Reply> | Reply;
}

/** A route with its schemas as validated and documented; the handler's types are erased here only. */
export interface Route {
  readonly method: RouteSpec<TProperties, TProperties, undefined>["method"];
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag: string;
  readonly unversioned: boolean;
  readonly public: boolean;
  readonly paginated: boolean;
  readonly fields: readonly string[] | undefined;
  readonly params: TObject;
  readonly query: TObject;
  readonly body: TObject | undefined;
  readonly response: ResponseSpec;
  readonly responses: Readonly<Record<number, ResponseSpec>>;
  readonly errors: readonly ErrorCode[];
  handle(request: Request<unknown, unknown, unknown>): Promise<Reply> | Reply;
}

export function route<
  P extends TProperties = Record<never, never>,
  Q extends TProperties = Record<never, never>,
  B extends TProperties | undefined = undefined,
>(spec: RouteSpec<P, Q, B>): Route {
  // Erased to plain object schemas: the handler's types were fixed by the spec above.
  const params: TObject = Type.Object(spec.params ?? {});
  const query: TObject = Type.Object(
    { ...commonQuery, ...(spec.paginated ? pageQuery : {}), ...(spec.query ?? {}) },
    { additionalProperties: false },
  );
  const bodyProperties: TProperties | undefined = spec.body;
  const body: TObject | undefined = bodyProperties
    ? Type.Object({ ...commonQuery, ...bodyProperties }, { additionalProperties: false })
    : undefined;
  return {
    method: spec.method,
    path: spec.path,
    operationId: spec.operationId,
    summary: spec.summary,
    tag: spec.tag,
    unversioned: spec.unversioned ?? false,
    public: spec.public ?? false,
    paginated: spec.paginated ?? false,
    fields: spec.fields,
    params,
    query,
    body,
    response: spec.response,
    responses: spec.responses ?? {},
    errors: spec.errors ?? [],
    // The request reaching here was validated against exactly these schemas (mountRoutes).
    handle: (request) => spec.handle(request as Parameters<typeof spec.handle>[0]),
  };
}

export const fullPath = (r: Pick<Route, "unversioned" | "path">) => (r.unversioned ? "" : "/v1") + r.path;
const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

function splitFields(value: unknown, name: "include" | "exclude", allowed: readonly string[] | undefined): string[] | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const fields = value
    .split(",")
    .map((f) => f.trim())
    .filter((f) => f !== "");
  const unknown = allowed ? fields.filter((f) => !allowed.includes(f)) : [];
  if (unknown.length > 0) {
    throw invalid(
      `${name} names unknown fields: ${unknown.join(", ")}`,
      unknown.map((f) => ({ path: name, message: `${f} is not a field of this response` })),
    );
  }
  return fields;
}

function project(item: unknown, include: string[] | undefined, exclude: string[] | undefined): unknown {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return item;
  return Object.fromEntries(Object.entries(item).filter(([key]) => (!include || include.includes(key)) && !exclude?.includes(key)));
}

/** Applies include/exclude to `data` (an object or a list of objects) of a response body. */
function applyFields(body: unknown, include?: string[], exclude?: string[]): unknown {
  if (!include && !exclude) return body;
  if (body === null || typeof body !== "object" || !("data" in body)) return body;
  const data = body.data;
  const projected = Array.isArray(data) ? data.map((d) => project(d, include, exclude)) : project(data, include, exclude);
  return { ...body, data: projected };
}

export function mountRoutes(router: Router, routes: readonly Route[]): void {
  for (const r of routes) {
    const query = queryValidator<Record<string, unknown>>(r.query);
    const body = r.body ? bodyValidator<Record<string, unknown>>(r.body) : undefined;
    const params = paramsValidator<Record<string, unknown>>(r.params);
    const method = r.method.toLowerCase() as "get" | "post" | "put" | "patch" | "delete";
    router[method](koaPath(fullPath(r)), async (ctx: Context) => {
      const q = query({ ...ctx.query });
      let b: Record<string, unknown> = {};
      if (body) {
        const raw = ctx.request.body === undefined ? {} : ctx.request.body;
        if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw invalid("the request body must be a JSON object");
        b = body(raw);
      } else if (ctx.request.body !== undefined) {
        throw invalid(`${r.method} ${r.path} takes no request body`);
      }
      const p = params({ ...(ctx as unknown as { params: Record<string, string> }).params });
      const include = splitFields(
        queryOrBody("include", q.include as string | undefined, b.include as string | undefined),
        "include",
        r.fields,
      );
      const exclude = splitFields(
        queryOrBody("exclude", q.exclude as string | undefined, b.exclude as string | undefined),
        "exclude",
        r.fields,
      );
      const caller = ctx.state.caller as Caller;
      const reply = await r.handle({
        query: q,
        body: b,
        params: p,
        caller,
        ctx,
        page: r.paginated ? pageRequest(q) : { limit: 10 },
      });
      if (ctx.respond === false) return; // streaming handlers (SSE) answer on their own
      ctx.status = reply.status ?? r.response.status ?? 200;
      if (reply.body !== undefined) ctx.body = applyFields(reply.body, include, exclude);
    });
  }
}
