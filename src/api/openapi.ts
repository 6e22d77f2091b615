import { fullPath, routeBodySchema, routeQuerySchema, type Route } from "./route.js";
import type { Schema } from "./validation.js";

const errorSchema: Schema = {
  type: "object",
  properties: {
    error: { type: "string", description: "human-readable message" },
    code: { type: "string", description: "stable machine-readable code" },
    details: {
      type: "array",
      items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } }, required: ["path", "message"] },
    },
  },
  required: ["error", "code"],
};

/** The OpenAPI 3.1 document, generated from the same schemas that validate requests. */
export function openApiDocument(routes: readonly Route[], info: { version: string; serverUrl: string }): Schema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const query = routeQuerySchema(route) as { properties: Record<string, Schema>; required: string[] };
    const parameters = [
      ...Object.entries(route.params ?? {}).map(([name, schema]) => ({ name, in: "path", required: true, schema })),
      ...Object.entries(query.properties).map(([name, schema]) => ({
        name, in: "query", required: query.required.includes(name), schema,
      })),
    ];
    const body = routeBodySchema(route);
    const status = String(route.response.status ?? 200);
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters,
      ...(route.public ? { security: [] } : {}),
      ...(body ? { requestBody: { required: false, content: { "application/json": { schema: body } } } } : {}),
      responses: {
        [status]: {
          description: route.response.description,
          ...(route.response.schema ? { content: { "application/json": { schema: route.response.schema } } } : {}),
        },
        default: { description: "an error", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
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
      schemas: { Error: errorSchema },
    },
  };
}
