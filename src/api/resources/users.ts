import { Type } from "@sinclair/typebox";
import { route, type Route } from "../route.js";
import type { ApiDeps } from "../deps.js";
import { Data } from "../pagination.js";
import { notFound } from "../../../commands/decider.js";
import { billingPeriod } from "../../readModels/usage.js";

export const User = Type.Object(
  {
    id: Type.String(),
    username: Type.String(),
    email: Type.String(),
    orgs: Type.Array(Type.Object({ name: Type.String(), id: Type.String(), orgname: Type.String(), email: Type.String() })),
    daily_compute_time_quota: Type.Optional(Type.Integer({ description: "milliseconds of compute per UTC day (free plan)" })),
    daily_compute_time_used: Type.Optional(Type.Integer({ description: "milliseconds used today (UTC)" })),
    daily_invocations_quota: Type.Optional(Type.Integer({ description: "invocations per UTC day (free plan)" })),
    daily_invocations_used: Type.Optional(Type.Integer()),
    billing_period_start_ts: Type.Optional(Type.Integer({ description: "epoch seconds (paid plan)" })),
    billing_period_end_ts: Type.Optional(Type.Integer({ description: "epoch seconds (paid plan)" })),
    billing_period_invocations: Type.Optional(Type.Integer()),
  },
  { $id: "User" },
);

export function userRoutes(deps: Pick<ApiDeps, "accountsView" | "usage" | "clock" | "settings">): Route[] {
  return [
    route({
      method: "GET",
      path: "/users/me",
      operationId: "getCurrentUser",
      summary: "The user the API key belongs to, with organizations and usage",
      tag: "users",
      fields: Object.keys(User.properties),
      response: { description: "the current user", schema: Data(User) },
      handle({ caller }) {
        const user = deps.accountsView.user(caller.userId);
        if (!user) throw notFound("user");
        const now = deps.clock.now();
        const orgs = deps.accountsView.orgsOf(user.id).map((o) => ({ name: o.name, id: o.id, orgname: o.orgname, email: o.email }));
        const base = { id: user.id, username: user.username, email: user.email, orgs };
        if (user.plan === "paid") {
          const period = billingPeriod(user.planSince, now);
          return {
            body: {
              data: {
                ...base,
                billing_period_start_ts: Math.floor(period.start / 1000),
                billing_period_end_ts: Math.floor(period.end / 1000),
                billing_period_invocations: deps.usage.invocationsBetween(user.id, period.start, period.end),
              },
            },
          };
        }
        const today = deps.usage.today(user.id, now);
        return {
          body: {
            data: {
              ...base,
              daily_compute_time_quota: deps.settings.freeDailyComputeMs,
              daily_compute_time_used: today.computeMs,
              daily_invocations_quota: deps.settings.freeDailyInvocations,
              daily_invocations_used: today.invocations,
            },
          },
        };
      },
    }),
  ];
}
