// Probes and metrics for whoever runs the node: /healthz (the process answers), /readyz (it can
// work: log, bus, read models caught up; 503 otherwise) and /metrics (Prometheus text). The probes
// need no key; /metrics is open to this machine only unless HEADWATER_METRICS_TOKEN is set, and
// always to the token or an operator's API key (docs/decisions.md, "Dashboard and operations").
import { timingSafeEqual, createHash } from "node:crypto";
import ipaddr from "ipaddr.js";
import { Type } from "@sinclair/typebox";
import type { Context } from "koa";
import { route, type Route } from "./route.js";
import { DomainError } from "../../commands/decider.js";
import { hashApiKey } from "../accounts/apiKeyFormat.js";
import type { ApiDeps } from "./deps.js";
import type { Readiness } from "../observability/health.js";
import type { Metrics } from "../observability/metrics.js";

export interface Operations {
  readonly readiness: Readiness;
  readonly metrics: Metrics;
  /** When set, /metrics wants it (or an operator key) from every client, loopback included. */
  readonly metricsToken: string | undefined;
}

const Health = Type.Object({ status: Type.Literal("ok"), version: Type.String(), uptime_s: Type.Integer() }, { $id: "Health" });
const Check = Type.Object({
  ok: Type.Boolean(),
  ms: Type.Integer({ description: "how long the check took" }),
  error: Type.Optional(Type.String()),
  lag: Type.Optional(Type.Integer({ description: "log positions the read models were behind when asked" })),
});
const ReadinessReport = Type.Object(
  {
    status: Type.Union([Type.Literal("ready"), Type.Literal("not_ready")]),
    checks: Type.Object({ log: Check, bus: Check, projections: Check }),
    closing: Type.Optional(Type.Boolean({ description: "the node is shutting down" })),
  },
  { $id: "Readiness" },
);

const sameSecret = (a: string, b: string) =>
  timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

function isLoopback(ip: string): boolean {
  try {
    const parsed = ipaddr.process(ip);
    return parsed.range() === "loopback";
  } catch {
    return false;
  }
}

function mayScrape(ctx: Context, deps: Pick<ApiDeps, "accountsView">, token: string | undefined): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get("authorization"));
  if (match) {
    if (token !== undefined && sameSecret(match[1], token)) return true;
    if (deps.accountsView.userByKeyHash(hashApiKey(match[1]))?.operator) return true;
    return false;
  }
  return token === undefined && isLoopback(ctx.ip);
}

export function operationRoutes(deps: Pick<ApiDeps, "accountsView">, ops: Operations, info: { version: string }): Route[] {
  const startedAt = Date.now();
  return [
    route({
      method: "GET",
      path: "/healthz",
      unversioned: true,
      public: true,
      operationId: "getHealth",
      summary: "Liveness: the process answers HTTP (no key needed)",
      tag: "operations",
      response: { description: "alive", schema: Health },
      handle: () => ({ body: { status: "ok", version: info.version, uptime_s: Math.floor((Date.now() - startedAt) / 1000) } }),
    }),
    route({
      method: "GET",
      path: "/readyz",
      unversioned: true,
      public: true,
      operationId: "getReadiness",
      summary: "Readiness: the log and the bus answer and the read models have caught up with the log (no key needed)",
      tag: "operations",
      response: { description: "ready", schema: ReadinessReport },
      responses: { 503: { description: "not ready: a check failed, or the node is shutting down", schema: ReadinessReport } },
      async handle() {
        const report = await ops.readiness.report();
        return {
          status: report.ready ? 200 : 503,
          body: { status: report.ready ? "ready" : "not_ready", checks: report.checks, ...(report.closing ? { closing: true } : {}) },
        };
      },
    }),
    route({
      method: "GET",
      path: "/metrics",
      unversioned: true,
      public: true,
      operationId: "getMetrics",
      summary:
        "Prometheus metrics. Open to loopback clients while HEADWATER_METRICS_TOKEN is unset; otherwise Authorization: Bearer <metrics token>; an operator's API key always works",
      tag: "operations",
      errors: ["unauthorized"],
      response: { description: "Prometheus text exposition format", contentType: "text/plain" },
      async handle({ ctx }) {
        if (!mayScrape(ctx, deps, ops.metricsToken)) {
          throw new DomainError(
            "unauthorized",
            ops.metricsToken === undefined
              ? "metrics are served to this machine only, or with an operator's API key"
              : "send Authorization: Bearer <HEADWATER_METRICS_TOKEN or an operator's API key>",
          );
        }
        const text = await ops.metrics.text();
        ctx.type = ops.metrics.contentType;
        return { body: text };
      },
    }),
  ];
}
