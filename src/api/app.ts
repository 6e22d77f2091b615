import type http from "node:http";
import Koa from "koa";
import Router from "@koa/router";
import { Type } from "@sinclair/typebox";
import { errorBodies } from "./errors.js";
import { jsonBody } from "./body.js";
import { bearerAuth } from "./auth.js";
import { fullPath, mountRoutes, route, type Route } from "./route.js";
import { openApiDocument } from "./openapi.js";
import type { ApiDeps } from "./deps.js";
import { userRoutes } from "./resources/users.js";
import { apiKeyRoutes } from "./resources/apiKeys.js";
import { orgRoutes } from "./resources/orgs.js";
import { componentRoutes } from "./resources/components.js";
import { sourceRoutes } from "./resources/sources.js";
import { eventRoutes } from "./resources/events.js";
import { connectedAccountRoutes } from "./resources/connectedAccounts.js";
import { subscriptionRoutes } from "./resources/subscriptions.js";
import { webhookRoutes } from "./resources/webhooks.js";
import { workflowRoutes } from "./resources/workflows.js";
import { sseRoutes, type SseHub } from "./sse.js";
import { sourceEndpoints } from "./endpoints.js";
import { RateLimiter } from "./rateLimit.js";
import { accessLog, requestIds, type FinishedRequest } from "./requestLog.js";
import { dashboard } from "./dashboard.js";
import { operationRoutes, type Operations } from "./operations.js";

export function apiRoutes(deps: ApiDeps, hub: SseHub): Route[] {
  return [
    ...userRoutes(deps),
    ...apiKeyRoutes(deps),
    ...orgRoutes(deps),
    ...componentRoutes(deps),
    ...sourceRoutes(deps),
    ...connectedAccountRoutes(deps),
    ...eventRoutes(deps),
    ...subscriptionRoutes(deps),
    ...webhookRoutes(deps),
    ...workflowRoutes(deps),
    ...sseRoutes(deps, hub),
  ];
}

/**
 * The whole HTTP API: source and workflow endpoints (no key; on Node's request directly, see
 * endpoints.ts), and the Koa application for the rest, read top to bottom: request ids and the
 * access log, errors, the dashboard's static files (no key), auth, body, routes.
 */
export function createApp(deps: ApiDeps, hub: SseHub, options: { version: string; operations: Operations }): http.RequestListener {
  const routes = [...apiRoutes(deps, hub), ...operationRoutes(deps, options.operations, options)];
  const openapi: Route = route({
    method: "GET",
    path: "/openapi.json",
    operationId: "getOpenApi",
    summary: "This document",
    tag: "meta",
    public: true,
    response: {
      description: "the OpenAPI 3.1 document",
      schema: Type.Object(
        {
          openapi: Type.String(),
          info: Type.Object({ title: Type.String(), version: Type.String() }),
          paths: Type.Record(Type.String(), Type.Unknown()),
        },
        {
          $id: "OpenApiDocument",
          additionalProperties: true,
          description: "an OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)",
        },
      ),
    },
    handle: () => ({
      body: openApiDocument(allRoutes, {
        version: options.version,
        serverUrl: deps.publicUrl(),
        endpointServer: deps.endpointUrl("").replace(/\/e\/$/, ""),
      }),
    }),
  });
  const allRoutes: Route[] = [...routes, openapi];
  const publicPaths = new Set(allRoutes.filter((r) => r.public).map((r) => `${r.method} ${fullPath(r)}`));
  const { settings } = deps;

  // Behind a trusted reverse proxy, client addresses (rate limits) come from X-Forwarded-For.
  const app = new Koa({ proxy: settings.trustProxy });
  const router = new Router();
  mountRoutes(router, allRoutes);
  const observe = (request: FinishedRequest) => options.operations.metrics.observeRequest(request);
  app.use(requestIds());
  app.use(accessLog(observe));
  app.use(errorBodies);
  app.use(dashboard());
  app.use(
    bearerAuth({
      accounts: deps.accountsView,
      isPublic: (method, path) => publicPaths.has(`${method} ${path}`),
      catchUp: () => deps.projector.catchUp(5_000),
      perKey: new RateLimiter({ ratePerSecond: settings.apiRatePerSecond, burst: settings.apiBurst }),
      perAddress: new RateLimiter({ ratePerSecond: settings.anonymousRatePerSecond, burst: settings.anonymousBurst }),
      streamTokens: deps.streamTokens,
    }),
  );
  app.use(jsonBody(settings.maxBodyBytes));
  app.use(router.routes());
  // Not thrown: the router sets Allow (a 405's) only when it answers itself; errorBodies gives the body.
  app.use(router.allowedMethods());
  const api = app.callback();
  const endpoints = sourceEndpoints(deps, { trustProxy: settings.trustProxy, onFinished: observe });
  return (req, res) => {
    if (!endpoints(req, res)) void api(req, res);
  };
}
