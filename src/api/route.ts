import type { Context } from "koa";
import Router from "@koa/router";
import { ApiError } from "./errors.js";
import { bodyValidator, paramsValidator, queryValidator, type Schema, type Validator } from "./validation.js";
import { paginationQuery, pageRequest } from "./pagination.js";
import type { PageRequest } from "../readModels/page.js";

/** Who is calling, resolved from the bearer key by the auth middleware. */
export interface Caller {
  readonly userId: string;
  readonly keyId: string;
  readonly operator: boolean;
}

export interface Request<Query, Body, Params> {
  readonly query: Query;
  readonly body: Body;
  readonly params: Params;
  readonly page: PageRequest;
  readonly caller: Caller;
  readonly ctx: Context;
}

export interface Reply {
  readonly status?: number;
  readonly body?: unknown;
}

/**
 * One endpoint: its schemas drive request validation and the OpenAPI document alike.
 * Paths are written OpenAPI-style (`/sources/{id}`).
 */
export interface Route<Query = any, Body = any, Params = any> {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag: string;
  /** Without the /v1 prefix (the SSE stream lives on the bare host). */
  readonly unversioned?: boolean;
  /** No bearer key needed. */
  readonly public?: boolean;
  readonly params?: Record<string, Schema>;
  readonly query?: Record<string, Schema>;
  readonly requiredQuery?: readonly string[];
  readonly body?: Schema;
  readonly paginated?: boolean;
  /** Fields of the response's `data` (or of its items) that include/exclude may name. */
  readonly fields?: readonly string[];
  readonly response: { readonly status?: number; readonly description: string; readonly schema?: Schema };
  handle(request: Request<Query, Body, Params>): Promise<Reply> | Reply;
}

const commonQuery: Record<string, Schema> = {
  include: { type: "string", description: "comma-separated response fields to include" },
  exclude: { type: "string", description: "comma-separated response fields to exclude" },
  org_id: { type: "string", description: "the organization in which to act" },
};

export const routeQuerySchema = (route: Route): Schema => ({
  type: "object",
  properties: { ...commonQuery, ...(route.paginated ? paginationQuery : {}), ...(route.query ?? {}) },
  required: [...(route.requiredQuery ?? [])],
  additionalProperties: false,
});

/** POST bodies may also carry the common parameters (the seed: "query string for GET, body for POST"). */
export const routeBodySchema = (route: Route): Schema | undefined => {
  if (!route.body) return undefined;
  const properties = (route.body.properties as Record<string, Schema> | undefined) ?? {};
  return { ...route.body, properties: { ...commonQuery, ...properties } };
};

export const routeParamsSchema = (route: Route): Schema => ({
  type: "object",
  properties: route.params ?? {},
  required: Object.keys(route.params ?? {}),
});

export const fullPath = (route: Route) => (route.unversioned ? "" : "/v1") + route.path;
const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

function splitFields(value: unknown, name: string, allowed: readonly string[] | undefined): string[] | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const fields = value.split(",").map((f) => f.trim()).filter((f) => f !== "");
  const unknown = allowed ? fields.filter((f) => !allowed.includes(f)) : [];
  if (unknown.length > 0) {
    throw new ApiError(400, "invalid_request", `${name} names unknown fields: ${unknown.join(", ")}`,
      unknown.map((f) => ({ path: name, message: `${f} is not a field of this response` })));
  }
  return fields;
}

function project(item: unknown, include: string[] | undefined, exclude: string[] | undefined): unknown {
  if (item === null || typeof item !== "object" || Array.isArray(item)) return item;
  const entries = Object.entries(item).filter(([key]) => (!include || include.includes(key)) && !exclude?.includes(key));
  return Object.fromEntries(entries);
}

/** Applies include/exclude to `data` (an object or a list of objects) of a response body. */
function applyFields(body: unknown, include?: string[], exclude?: string[]): unknown {
  if (!include && !exclude) return body;
  if (body === null || typeof body !== "object" || !("data" in body)) return body;
  const data = (body as { data: unknown }).data;
  const projected = Array.isArray(data) ? data.map((d) => project(d, include, exclude)) : project(data, include, exclude);
  return { ...body, data: projected };
}

export function mountRoutes(router: Router, routes: readonly Route[]): void {
  for (const route of routes) {
    const query: Validator<Record<string, unknown>> = queryValidator(routeQuerySchema(route));
    const bodySchema = routeBodySchema(route);
    const body = bodySchema ? bodyValidator<Record<string, unknown>>(bodySchema) : undefined;
    const params = paramsValidator<Record<string, unknown>>(routeParamsSchema(route));
    const method = route.method.toLowerCase() as "get" | "post" | "put" | "delete";
    router[method](koaPath(fullPath(route)), async (ctx: Context) => {
      const q = query({ ...ctx.query });
      let b: Record<string, unknown> = {};
      if (body) {
        const raw = ctx.request.body ?? {};
        if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
          throw new ApiError(400, "invalid_request", "the request body must be a JSON object");
        }
        b = body(raw);
      } else if (ctx.request.body !== undefined) {
        throw new ApiError(400, "invalid_request", `${route.method} ${route.path} takes no request body`);
      }
      const p = params({ ...(ctx as unknown as { params: Record<string, string> }).params });
      const include = splitFields(b.include ?? q.include, "include", route.fields);
      const exclude = splitFields(b.exclude ?? q.exclude, "exclude", route.fields);
      const caller = ctx.state.caller as Caller;
      const reply = await route.handle({
        query: q, body: b, params: p, caller, ctx,
        page: route.paginated ? pageRequest(q as { limit?: number; after?: string; before?: string }) : { limit: 10 },
      });
      if (ctx.respond === false) return; // streaming handlers (SSE) answer on their own
      ctx.status = reply.status ?? route.response.status ?? 200;
      if (reply.body !== undefined) ctx.body = applyFields(reply.body, include, exclude);
    });
  }
}
