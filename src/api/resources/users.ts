import type { Route } from "../route.js";
import type { Services } from "../services.js";
import { notFound } from "../errors.js";
import { billingPeriod } from "../../readModels/usage.js";

const userFields = [
  "id", "username", "email", "orgs",
  "daily_compute_time_quota", "daily_compute_time_used", "daily_invocations_quota", "daily_invocations_used",
  "billing_period_start_ts", "billing_period_end_ts", "billing_period_invocations",
] as const;

export const userSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    username: { type: "string" },
    email: { type: "string" },
    orgs: {
      type: "array",
      items: {
        type: "object",
        properties: { name: { type: "string" }, id: { type: "string" }, orgname: { type: "string" }, email: { type: "string" } },
      },
    },
    daily_compute_time_quota: { type: "integer", description: "milliseconds of compute per UTC day (free plan)" },
    daily_compute_time_used: { type: "integer", description: "milliseconds used today (UTC)" },
    daily_invocations_quota: { type: "integer", description: "invocations per UTC day (free plan)" },
    daily_invocations_used: { type: "integer" },
    billing_period_start_ts: { type: "integer", description: "epoch seconds (paid plan)" },
    billing_period_end_ts: { type: "integer", description: "epoch seconds (paid plan)" },
    billing_period_invocations: { type: "integer" },
  },
};

export function userRoutes(services: Services): Route[] {
  return [
    {
      method: "GET",
      path: "/users/me",
      operationId: "getCurrentUser",
      summary: "The user the API key belongs to, with organizations and usage",
      tag: "users",
      fields: userFields,
      response: { description: "the current user", schema: { type: "object", properties: { data: userSchema } } },
      handle({ caller }) {
        const user = services.accounts.user(caller.userId);
        if (!user) throw notFound("user");
        const now = services.clock.now();
        const orgs = services.accounts.orgsOf(user.id).map((o) => ({ name: o.name, id: o.id, orgname: o.orgname, email: o.email }));
        const base = { id: user.id, username: user.username, email: user.email, orgs };
        if (user.plan === "paid") {
          const period = billingPeriod(user.plan_since, now);
          return {
            body: {
              data: {
                ...base,
                billing_period_start_ts: Math.floor(period.start / 1000),
                billing_period_end_ts: Math.floor(period.end / 1000),
                billing_period_invocations: services.usage.invocationsBetween(user.id, period.start, period.end),
              },
            },
          };
        }
        const today = services.usage.today(user.id, now);
        return {
          body: {
            data: {
              ...base,
              daily_compute_time_quota: services.config.freeDailyComputeMs,
              daily_compute_time_used: today.computeMs,
              daily_invocations_quota: services.config.freeDailyInvocations,
              daily_invocations_used: today.invocations,
            },
          },
        };
      },
    },
  ];
}
