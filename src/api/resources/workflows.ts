import { Type } from "@sinclair/typebox";
import type { Context } from "koa";
import { route, type Caller, type Route, queryOrBody } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data, Paged, aliasedLimit, pageBody } from "../pagination.js";
import { EventSummary, LogLine, RunLog } from "./events.js";
import { eventSummary, logView } from "../../readModels/summaries.js";
import type { Workflow as WorkflowView } from "../../readModels/workflows.js";
import { ERRORS_CHANNEL } from "../../../commands/subscriptions/subscription.js";
import { notFound } from "../../../commands/decider.js";
import { newId } from "../../ids.js";
import { parseDefinition } from "../../workflows/definition.js";
import { workflowKey } from "../../workflows/service.js";

const Step = Type.Object(
  {
    name: Type.String(),
    cell_id: Type.String({ description: "c_ id of the step in this deployment" }),
    component_id: Type.String({ description: "the action the step runs (sc_ id)" }),
    kind: Type.Union([Type.Literal("action"), Type.Literal("code")]),
    props: Type.Record(Type.String(), Type.Unknown(), { description: "configured props; secrets redacted, {{expressions}} as written" }),
  },
  { $id: "WorkflowStep" },
);

export const Workflow = Type.Object(
  {
    id: Type.String({ description: "p_ id" }),
    key: Type.String({ description: "what the definition is deployed under (its file name): deploying it again is a new version" }),
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    version: Type.Integer(),
    deployment_id: Type.String({ description: "d_ id of the current version" }),
    trigger: Type.Object({
      type: Type.Union([Type.Literal("http"), Type.Literal("timer"), Type.Literal("none")]),
      respond: Type.Optional(Type.Union([Type.Literal("immediately"), Type.Literal("workflow")])),
      endpoint_url: Type.Optional(Type.String()),
      interval_seconds: Type.Optional(Type.Integer()),
      cron: Type.Optional(Type.String()),
      timezone: Type.Optional(Type.String({ description: "a cron's time zone (UTC when none was given)" })),
    }),
    steps: Type.Array(Step),
    error_workflow: Type.Boolean({ description: "receives the errors of the owner's other workflows" }),
    active: Type.Boolean(),
    owner_id: Type.String(),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
  },
  { $id: "Workflow" },
);

export const WorkflowRunOutcome = Type.Object(
  {
    invocation_id: Type.String(),
    ok: Type.Union([Type.Boolean(), Type.Null()]),
    error: Type.Union([
      Type.Object({ name: Type.String(), message: Type.String(), code: Type.String(), cell_id: Type.Union([Type.String(), Type.Null()]) }),
      Type.Null(),
    ]),
    exited: Type.Union([Type.Object({ reason: Type.Union([Type.String(), Type.Null()]), step: Type.String() }), Type.Null()]),
    steps: Type.Array(
      Type.Object({
        name: Type.String(),
        cell_id: Type.String(),
        ok: Type.Boolean(),
        return_value: Type.Optional(Type.Unknown()),
        exports: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
        exited: Type.Optional(Type.Union([Type.String(), Type.Null()])),
      }),
    ),
    emitted: Type.Array(Type.Object({ id: Type.String(), channel: Type.String() })),
    logs: Type.Array(LogLine),
    response: Type.Union([
      Type.Object({ status: Type.Integer(), headers: Type.Record(Type.String(), Type.Unknown()), body: Type.Unknown() }),
      Type.Null(),
    ]),
  },
  { $id: "WorkflowRunOutcome" },
);

const WORKFLOW_ID = Type.String({ maxLength: 100, description: "p_ id" });

type WorkflowDeps = Pick<
  ApiDeps,
  | "access"
  | "workflows"
  | "workflowsView"
  | "workflowRuns"
  | "events"
  | "runLogs"
  | "components"
  | "admission"
  | "projector"
  | "clock"
  | "settings"
  | "endpointUrl"
>;

const REDACTED = "[redacted]";

export function workflowView(deps: Pick<ApiDeps, "components" | "endpointUrl">, workflow: WorkflowView) {
  const trigger = workflow.trigger;
  return {
    id: workflow.id,
    key: workflow.key,
    name: workflow.name,
    description: workflow.description,
    version: workflow.version,
    deployment_id: workflow.deploymentId,
    trigger:
      trigger.type === "http"
        ? {
            type: "http" as const,
            respond: trigger.respond,
            ...(workflow.endpointId ? { endpoint_url: deps.endpointUrl(workflow.endpointId) } : {}),
          }
        : trigger.type === "timer"
          ? {
              type: "timer" as const,
              ...("cron" in trigger
                ? { cron: trigger.cron, timezone: trigger.timezone ?? "UTC" }
                : { interval_seconds: trigger.intervalSeconds }),
            }
          : { type: "none" as const },
    steps: workflow.steps.map((step) => {
      const secret = new Set(
        deps.components
          .get(step.componentId)
          ?.meta.component.props.filter((p) => p.secret || p.type === "app")
          .map((p) => p.name) ?? [],
      );
      return {
        name: step.name,
        cell_id: step.cellId,
        component_id: step.componentId,
        kind: step.kind,
        props: Object.fromEntries(Object.entries(step.props).map(([name, value]) => [name, secret.has(name) ? REDACTED : value])),
      };
    }),
    error_workflow: workflow.errorWorkflow,
    active: workflow.active,
    owner_id: workflow.ownerId,
    created_at: workflow.createdAt,
    updated_at: workflow.updatedAt,
  };
}

export function visibleWorkflow(deps: Pick<ApiDeps, "access" | "workflowsView">, caller: Caller, id: string): WorkflowView {
  return deps.access.visible(caller, /^p_[0-9a-z]+$/.test(id) ? deps.workflowsView.workflow(id) : undefined, "workflow");
}

export function workflowRoutes(deps: WorkflowDeps): Route[] {
  const meta = (caller: Caller) => ({ metadata: { by: caller.userId } });
  const listing = (id: string, channel: string | undefined, except: string | undefined) => ({
    params: { workflow_id: WORKFLOW_ID },
    paginated: true as const,
    query: {
      n: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "alias of limit" })),
      expand: Type.Optional(Type.Literal("event", { description: "event: full event data" })),
    },
    fields: Object.keys(EventSummary.properties),
    errors: ["not_found" as const],
    response: { description: `a page of event summaries (${id})`, schema: Paged(EventSummary) },
    handle({
      caller,
      params,
      query,
      page,
      ctx,
    }: {
      caller: Caller;
      params: { workflow_id: string };
      query: { n?: number; expand?: "event" };
      page: Parameters<ApiDeps["events"]["events"]>[1];
      ctx: Context;
    }) {
      const workflow = visibleWorkflow(deps, caller, params.workflow_id);
      const events = deps.events.events(workflow.id, { ...page, limit: aliasedLimit(query.n, ctx.query.limit, page) }, channel, except);
      return { body: pageBody(events, (e) => eventSummary(e, query.expand === "event")) };
    },
  });
  return [
    route({
      method: "POST",
      path: "/workflows",
      operationId: "deployWorkflow",
      summary:
        "Deploy a workflow from its definition (YAML or JSON text, or an object); the same key again deploys a new version (extension: the seed's interface does not create workflows)",
      tag: "workflows",
      body: {
        definition: Type.Unknown({ description: "the definition: an object, or its YAML or JSON text" }),
        key: Type.Optional(Type.String({ maxLength: 100, description: "what it is deployed under (default: its name as a slug)" })),
      },
      fields: Object.keys(Workflow.properties),
      errors: ["not_found", "json_too_deep"],
      response: { description: "the workflow's current version", schema: Data(Workflow) },
      async handle({ caller, body, query }) {
        const definition = parseDefinition(body.definition);
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        const deployed = await written(
          deps,
          deps.workflows.deploy(
            {
              ownerId,
              creatorId: caller.userId,
              key: workflowKey(definition, body.key),
              definition,
              canSee: (owner) => deps.access.canSee(caller, owner),
            },
            meta(caller),
          ),
        );
        return { body: { data: workflowView(deps, deps.workflowsView.workflow(deployed.workflowId)!) } };
      },
    }),
    route({
      method: "GET",
      path: "/users/me/workflows",
      operationId: "listMyWorkflows",
      summary: "The caller's workflows (extension)",
      tag: "workflows",
      paginated: true,
      fields: Object.keys(Workflow.properties),
      response: { description: "a page of workflows, oldest first", schema: Paged(Workflow) },
      handle: ({ caller, page }) => ({ body: pageBody(deps.workflowsView.workflowsOf(caller.userId, page), (w) => workflowView(deps, w)) }),
    }),
    route({
      method: "GET",
      path: "/orgs/{org_id}/workflows",
      operationId: "listOrgWorkflows",
      summary: "An organization's workflows (members only; extension)",
      tag: "workflows",
      params: { org_id: Type.String({ maxLength: 100 }) },
      paginated: true,
      fields: Object.keys(Workflow.properties),
      errors: ["not_found"],
      response: { description: "a page of workflows, oldest first", schema: Paged(Workflow) },
      handle: ({ caller, params, page }) => {
        deps.access.org(caller, params.org_id);
        return { body: pageBody(deps.workflowsView.workflowsOf(params.org_id, page), (w) => workflowView(deps, w)) };
      },
    }),
    route({
      method: "GET",
      path: "/workflows/{id}",
      operationId: "getWorkflow",
      summary: "A workflow's current version (extension)",
      tag: "workflows",
      params: { id: WORKFLOW_ID },
      fields: Object.keys(Workflow.properties),
      errors: ["not_found"],
      response: { description: "the workflow", schema: Data(Workflow) },
      handle: ({ caller, params }) => ({ body: { data: workflowView(deps, visibleWorkflow(deps, caller, params.id)) } }),
    }),
    route({
      method: "DELETE",
      path: "/workflows/{id}",
      operationId: "deleteWorkflow",
      summary: "Delete a workflow with its emits, errors, logs and subscriptions (extension)",
      tag: "workflows",
      params: { id: WORKFLOW_ID },
      errors: ["not_found"],
      response: { status: 204, description: "deleted" },
      async handle({ caller, params }) {
        await written(deps, deps.workflows.delete(visibleWorkflow(deps, caller, params.id), meta(caller)));
        return { status: 204 };
      },
    }),
    route({
      method: "POST",
      path: "/workflows/{id}/run",
      operationId: "runWorkflow",
      summary: "Run the workflow once now with an optional trigger event, and answer with every step's outcome (extension)",
      tag: "workflows",
      params: { id: WORKFLOW_ID },
      body: { event: Type.Optional(Type.Unknown({ description: "steps.trigger.event; default {manual: true, timestamp}" })) },
      errors: ["not_found", "quota_exceeded", "backlog_full", "run_timeout"],
      response: { description: "the run's outcome", schema: Data(WorkflowRunOutcome) },
      async handle({ caller, params, body }) {
        const workflow = visibleWorkflow(deps, caller, params.id);
        const invocationId = newId("inv");
        const event = body.event ?? { manual: true, timestamp: Math.floor(deps.clock.now() / 1000) };
        deps.admission.admit({
          invocationId,
          sourceId: workflow.id,
          ownerId: workflow.creatorId,
          bytes: JSON.stringify(event).length + 1024,
        });
        const reply = await deps.admission.during(
          invocationId,
          deps.workflowRuns.submitAndWait(
            {
              invocationId,
              workflowId: workflow.id,
              trigger: "manual",
              event,
              minPosition: deps.projector.position,
              enqueuedMs: deps.clock.now(),
              uniqueToRecord: true,
            },
            deps.settings.runWaitMs,
          ),
        );
        if (reply.status === "gone") throw notFound("workflow");
        if (reply.position !== undefined) await deps.projector.waitFor(reply.position);
        const error = reply.error
          ? { name: reply.error.name, message: reply.error.message, code: reply.error.code, cell_id: reply.error.cellId }
          : null;
        return {
          body: {
            data: {
              invocation_id: invocationId,
              ok: reply.ok ?? null,
              error,
              exited: reply.exited ?? null,
              steps: reply.steps ?? [],
              emitted: reply.emitted ?? [],
              logs: reply.logs ?? [],
              response: reply.response ?? null,
            },
          },
        };
      },
    }),
    route({
      method: "GET",
      path: "/workflows/{workflow_id}/event_summaries",
      operationId: "listWorkflowEvents",
      summary: "Events the workflow emitted through its emit steps (the last 100 are kept), newest first; event is {raw_event}",
      tag: "workflows",
      ...listing("emits", undefined, ERRORS_CHANNEL),
    }),
    route({
      method: "GET",
      path: "/workflows/{workflow_id}/$errors/event_summaries",
      operationId: "listWorkflowErrors",
      summary:
        "Errors the workflow's steps threw, newest first; event is {original_event, original_context, error: {code, cellId, ts, stack}}",
      tag: "workflows",
      ...listing("errors", ERRORS_CHANNEL, undefined),
    }),
    route({
      method: "GET",
      path: "/workflows/{workflow_id}/logs",
      operationId: "listWorkflowLogs",
      summary: "The workflow's most recent runs with their console output, newest first (extension)",
      tag: "workflows",
      params: { workflow_id: WORKFLOW_ID },
      paginated: true,
      fields: Object.keys(RunLog.properties),
      errors: ["not_found"],
      response: { description: "a page of run logs", schema: Paged(RunLog) },
      handle: ({ caller, params, page }) => ({
        body: pageBody(deps.runLogs.logs(visibleWorkflow(deps, caller, params.workflow_id).id, page), logView),
      }),
    }),
  ];
}
