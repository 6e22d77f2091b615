import type { TSchema } from "@sinclair/typebox";
import { fullPath, type ResponseSpec, type Route } from "./route.js";
import { STATUS } from "./errors.js";
import type { ErrorCode } from "../../commands/errors.js";

type Json = Record<string, unknown>;

const errorSchema: Json = {
  type: "object",
  properties: {
    error: { type: "string", description: "human-readable message" },
    code: { type: "string", enum: Object.keys(STATUS), description: "stable machine-readable code" },
    details: {
      type: "array",
      items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } }, required: ["path", "message"] },
    },
  },
  required: ["error", "code"],
};

/** Codes every authenticated endpoint may answer. */
const COMMON_ERRORS: readonly ErrorCode[] = ["invalid_request", "unauthorized", "rate_limited"];

/**
 * Plain JSON of a schema, with every named schema ($id) moved to components.schemas and referenced,
 * so generated clients get one type per resource.
 */
function hoist(schema: unknown, named: Map<string, unknown>): unknown {
  if (Array.isArray(schema)) return schema.map((s) => hoist(s, named));
  if (schema === null || typeof schema !== "object") return schema;
  const entries = Object.entries(schema as Json);
  const id = (schema as Json).$id;
  const plain = Object.fromEntries(entries.filter(([key]) => key !== "$id").map(([key, value]) => [key, hoist(value, named)]));
  if (typeof id !== "string") return plain;
  named.set(id, plain);
  return { $ref: `#/components/schemas/${id}` };
}

/** Codes every endpoint that reads a JSON body may answer. */
const BODY_ERRORS: readonly ErrorCode[] = ["malformed_json", "payload_too_large", "unsupported_media_type"];

function response(spec: ResponseSpec, named: Map<string, unknown>): Json {
  const contentType = spec.contentType ?? "application/json";
  if (spec.schema) return { description: spec.description, content: { [contentType]: { schema: hoist(spec.schema, named) } } };
  if (contentType !== "application/json")
    return { description: spec.description, content: { [contentType]: { schema: { type: "string" } } } };
  return { description: spec.description };
}

const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };

/**
 * Source endpoints (`src/api/endpoints.ts`) are not routes of the table: any method, any sub-path,
 * no key, and the answer is the component's. Documented here by hand, on the endpoint origin.
 */
function endpointPaths(endpointServer: string): Record<string, Json> {
  const operation = (method: string, sub: boolean): Json => ({
    operationId: `${method}SourceEndpoint${sub ? "SubPath" : ""}`,
    summary:
      "A source's HTTP endpoint (configured_props.http.endpoint_url): the request becomes an HTTP event for the source's run. " +
      "The answer is 200 {success, invocation_id} once queued; with customResponse, the component's own response ($respond), or 204 when the run never responded",
    tags: ["source endpoints"],
    security: [],
    servers: [{ url: endpointServer }],
    parameters: [
      {
        name: "id",
        in: "path",
        required: true,
        description: "the endpoint token (24 letters and digits)",
        schema: { type: "string", pattern: "^[0-9a-z]{24}$" },
      },
      ...(sub
        ? [
            {
              name: "path",
              in: "path",
              required: true,
              description: "any sub-path, passed to the run as event.path",
              schema: { type: "string" },
            },
          ]
        : []),
    ],
    ...(method === "get" || method === "head" || method === "options"
      ? {}
      : { requestBody: { required: false, description: "any body: JSON, form, multipart or text", content: { "*/*": { schema: {} } } } }),
    responses: {
      "200": {
        description: "queued (or the component's response)",
        content: { "application/json": { schema: { $ref: "#/components/schemas/EndpointAccepted" } }, "*/*": { schema: {} } },
      },
      "204": { description: "customResponse: the run ended without responding" },
      "400": { description: "malformed_body: the body could not be read", content: errorContent },
      "500": { description: "run_failed: customResponse and the run failed before it responded", content: errorContent },
      "404": { description: "not_found: no source has this endpoint", content: errorContent },
      "413": { description: "payload_too_large (HEADWATER_ENDPOINT_MAX_BODY_BYTES)", content: errorContent },
      "429": { description: "rate_limited, quota_exceeded or backlog_full, with Retry-After", content: errorContent },
      "503": { description: "overloaded (the node's backlog is full), with Retry-After", content: errorContent },
      "504": { description: "run_timeout: a custom response did not come in time", content: errorContent },
    },
  });
  const methods = ["get", "post", "put", "patch", "delete", "head", "options"];
  return {
    "/e/{id}": Object.fromEntries(methods.map((m) => [m, operation(m, false)])),
    "/e/{id}/{path}": Object.fromEntries(methods.map((m) => [m, operation(m, true)])),
  };
}

/** The OpenAPI 3.1 document, generated from the same schemas that validate requests. */
export function openApiDocument(routes: readonly Route[], info: { version: string; serverUrl: string; endpointServer?: string }): Json {
  const named = new Map<string, unknown>();
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const query = route.query as TSchema & { properties: Record<string, TSchema>; required?: string[] };
    const params = route.params as TSchema & { properties: Record<string, TSchema> };
    const parameters = [
      ...Object.entries(params.properties).map(([name, schema]) => ({ name, in: "path", required: true, schema: hoist(schema, named) })),
      ...Object.entries(query.properties).map(([name, schema]) => ({
        name,
        in: "query",
        required: (query.required ?? []).includes(name),
        schema: hoist(schema, named),
      })),
    ];
    const status = String(route.response.status ?? 200);
    const errors = new Set<ErrorCode>([
      ...(route.public ? [] : COMMON_ERRORS),
      ...(route.body ? BODY_ERRORS : []),
      ...(route.public && route.method === "GET" ? ["rate_limited" as const] : []),
      ...route.errors,
    ]);
    const errorResponses: Record<string, Json> = {};
    for (const code of errors) {
      const httpStatus = String(STATUS[code]);
      const existing = errorResponses[httpStatus];
      errorResponses[httpStatus] = {
        description: existing ? `${String(existing.description)}, ${code}` : code,
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
    }
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters,
      ...(route.public ? { security: [] } : {}),
      ...(route.body ? { requestBody: { required: false, content: { "application/json": { schema: hoist(route.body, named) } } } } : {}),
      responses: {
        [status]: response(route.response, named),
        ...errorResponses,
        ...Object.fromEntries(Object.entries(route.responses).map(([code, spec]) => [code, response(spec, named)])),
        default: {
          description: "an unexpected error",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
    };
    const path = fullPath(route);
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Headwater event source API", version: info.version },
    servers: [{ url: info.serverUrl }],
    security: [{ bearer: [] }],
    paths: { ...paths, ...endpointPaths(info.endpointServer ?? info.serverUrl) },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        Error: errorSchema,
        EndpointAccepted: {
          type: "object",
          properties: { success: { type: "boolean", const: true }, invocation_id: { type: "string" } },
          required: ["success", "invocation_id"],
        },
        ...Object.fromEntries(named),
      },
    },
  };
}
