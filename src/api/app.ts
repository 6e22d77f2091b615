import Koa from "koa";
import Router from "@koa/router";
import { errorBodies } from "./errors.js";
import { jsonBody } from "./body.js";
import { bearerAuth } from "./auth.js";
import { fullPath, mountRoutes, type Route } from "./route.js";
import { openApiDocument } from "./openapi.js";
import type { Services } from "./services.js";
import { userRoutes } from "./resources/users.js";
import { apiKeyRoutes } from "./resources/apiKeys.js";
import { orgRoutes } from "./resources/orgs.js";
import { componentRoutes } from "./resources/components.js";
import { sourceRoutes } from "./resources/sources.js";
import { eventRoutes } from "./resources/events.js";
import { sseRoutes, type SseHub } from "./sse.js";
import { sourceEndpoints } from "./endpoints.js";
import { RateLimiter } from "./rateLimit.js";

export function apiRoutes(services: Services, hub: SseHub): Route[] {
  return [
    ...userRoutes(services), ...apiKeyRoutes(services), ...orgRoutes(services), ...componentRoutes(services),
    ...sourceRoutes(services), ...eventRoutes(services), ...sseRoutes(services, hub),
  ];
}

/** The whole HTTP API, read top to bottom: errors, source endpoints (no key), auth, body, routes. */
export function createApp(services: Services, hub: SseHub, options: { version: string; publicUrl: () => string }): Koa {
  const routes = apiRoutes(services, hub);
  const openapi: Route = {
    method: "GET",
    path: "/openapi.json",
    operationId: "getOpenApi",
    summary: "This document",
    tag: "meta",
    public: true,
    response: { description: "the OpenAPI 3.1 document" },
    handle: () => ({ body: openApiDocument(allRoutes, { version: options.version, serverUrl: options.publicUrl() }) }),
  };
  const allRoutes = [...routes, openapi];
  const publicPaths = new Set(allRoutes.filter((r) => r.public).map((r) => `${r.method} ${fullPath(r)}`));

  // Behind a trusted reverse proxy, client addresses (rate limits) come from X-Forwarded-For.
  const app = new Koa({ proxy: services.config.trustProxy });
  const router = new Router();
  mountRoutes(router, allRoutes);
  app.use(errorBodies);
  app.use(sourceEndpoints(services, {
    maxBodyBytes: services.config.endpointMaxBodyBytes,
    ratePerSecond: services.config.endpointRatePerSecond,
    burst: services.config.endpointBurst,
  }));
  app.use(
    bearerAuth({
      accounts: services.accounts,
      isPublic: (method, path) => publicPaths.has(`${method} ${path}`),
      catchUp: () => services.projector.catchUp(5_000),
      perKey: new RateLimiter({ ratePerSecond: services.config.apiRatePerSecond, burst: services.config.apiBurst }),
      perAddress: new RateLimiter({ ratePerSecond: services.config.anonymousRatePerSecond, burst: services.config.anonymousBurst }),
    }),
  );
  app.use(jsonBody(services.config.maxBodyBytes));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  return app;
}
