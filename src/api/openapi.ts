import type { TSchema } from "@sinclair/typebox";
import { fullPath, type Route } from "./route.js";
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

/** The OpenAPI 3.1 document, generated from the same schemas that validate requests. */
export function openApiDocument(routes: readonly Route[], info: { version: string; serverUrl: string }): Json {
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
    const errors = new Set<ErrorCode>([...(route.public ? [] : COMMON_ERRORS), ...route.errors]);
    const errorResponses: Record<string, Json> = {};
    for (const code of errors) {
      const httpStatus = String(STATUS[code]);
      const existing = errorResponses[httpStatus];
      errorResponses[httpStatus] = {
        description: existing ? `${String(existing.description)}, ${code}` : code,
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
    }
    const contentType = route.response.contentType ?? "application/json";
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters,
      ...(route.public ? { security: [] } : {}),
      ...(route.body ? { requestBody: { required: false, content: { "application/json": { schema: hoist(route.body, named) } } } } : {}),
      responses: {
        [status]: {
          description: route.response.description,
          ...(route.response.schema
            ? { content: { [contentType]: { schema: hoist(route.response.schema, named) } } }
            : contentType !== "application/json"
              ? { content: { [contentType]: { schema: { type: "string" } } } }
              : {}),
        },
        ...errorResponses,
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
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { Error: errorSchema, ...Object.fromEntries(named) },
    },
  };
}
