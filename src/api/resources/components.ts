import { Type } from "@sinclair/typebox";
import { route, type Caller, type Route, queryOrBody } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data } from "../pagination.js";
import { invalid, notFound } from "../../../commands/decider.js";
import { REGISTRY_OWNER } from "../../../commands/components/component.js";
import type { LoadedComponent } from "../../components/componentCache.js";

export const ConfigurableProp = Type.Object(
  {
    name: Type.String(),
    type: Type.String({
      description:
        "app, string, integer, boolean, object, any, their arrays (string[], …), http_request (a request the component sends with this.<prop>.execute()), alert, dir, $.interface.http, $.interface.timer, $.service.db",
    }),
    label: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    default: Type.Optional(Type.Unknown()),
    app: Type.Optional(Type.String({ description: "for app-type props" })),
    optional: Type.Optional(Type.Boolean()),
    secret: Type.Optional(Type.Boolean()),
    min: Type.Optional(Type.Integer()),
    max: Type.Optional(Type.Integer()),
    options: Type.Optional(Type.Array(Type.Unknown())),
    customResponse: Type.Optional(Type.Boolean({ description: "$.interface.http: the run answers each request (http.respond)" })),
    reloadProps: Type.Optional(
      Type.Boolean({ description: "the component's additionalProps() adds props for this prop's value: set it, then the props added" }),
    ),
    withLabel: Type.Optional(
      Type.Boolean({ description: "the component gets { label, value }: configure either that object or the value alone" }),
    ),
    remoteOptions: Type.Optional(
      Type.Boolean({ description: "options come from the prop's options() method: POST /components/{key_or_id}/props/{prop}/options" }),
    ),
  },
  { $id: "ConfigurableProp", additionalProperties: true },
);

export const Component = Type.Object(
  {
    id: Type.String({ description: "sc_ id" }),
    key: Type.Union([Type.String(), Type.Null()]),
    code: Type.String(),
    code_hash: Type.String({ description: "SHA-256 of the code, hex" }),
    name: Type.String(),
    version: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    configurable_props: Type.Array(ConfigurableProp),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
  },
  { $id: "Component" },
);

export function componentView(component: LoadedComponent) {
  return {
    id: component.id,
    key: component.key,
    code: component.code,
    code_hash: component.codeHash,
    name: component.name,
    version: component.version,
    description: component.description,
    configurable_props: component.configurableProps,
    created_at: component.createdAt,
    // Saved code never changes.
    updated_at: component.createdAt,
  };
}

/** Bodies that carry component code: component_code wins, then component_files; component_url is then only metadata. */
export const componentCode = {
  component_code: Type.Optional(Type.String({ minLength: 1, maxLength: 512 * 1024, description: "full component code" })),
  component_files: Type.Optional(
    Type.Record(
      Type.String({ minLength: 1, maxLength: 512, pattern: "^(?![/\\\\])(?!.*(^|/)\\.\\.?(/|$))[^\\u0000]+$" }),
      Type.String({ maxLength: 512 * 1024 }),
      {
        maxProperties: 50,
        description:
          "extension: a multi-file component, relative path → code (relative imports resolve among them, Node-style); needs component_entry",
      },
    ),
  ),
  component_entry: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: "with component_files: the path of the entry module" }),
  ),
  component_url: Type.Optional(
    Type.String({ format: "uri", pattern: "^https?://", maxLength: 2048, description: "where to fetch the code" }),
  ),
};

/** What a body says the code is, in the seed's precedence: code, then uploaded files, then a URL (then only metadata). */
export function codeOf(body: {
  component_code?: string | undefined;
  component_files?: Record<string, string> | undefined;
  component_entry?: string | undefined;
  component_url?: string | undefined;
}): { code?: string; url?: string; files?: Record<string, string>; entry?: string } {
  const url = body.component_url !== undefined ? { url: body.component_url } : {};
  if (body.component_code !== undefined) return { code: body.component_code, ...url };
  if (body.component_files !== undefined) {
    if (body.component_entry === undefined) {
      throw invalid("component_files needs component_entry", [
        { path: "body.component_entry", message: "is required with component_files" },
      ]);
    }
    return { files: body.component_files, entry: body.component_entry, ...url };
  }
  return url;
}

/** The answer of POST /components/{id}/run: what `pd` shows for an action run by hand. */
export const ActionRunOutcome = Type.Object(
  {
    invocation_id: Type.String(),
    ok: Type.Boolean({ description: "false when run() threw, a limit was hit, or a send failed (error.code SEND_FAILED)" }),
    return_value: Type.Unknown({ description: "what run() returned (null when it failed)" }),
    exports: Type.Record(Type.String(), Type.Unknown(), { description: "the $.export values, $summary included" }),
    summary: Type.Unknown({ description: "exports.$summary, or null" }),
    logs: Type.Array(Type.Object({ ts: Type.Integer(), level: Type.String(), message: Type.String() })),
    error: Type.Union([
      Type.Object({ name: Type.String(), message: Type.String(), code: Type.String(), stack: Type.Optional(Type.String()) }),
      Type.Null(),
    ]),
    sends: Type.Array(
      Type.Object({
        kind: Type.String({ description: "http, email or s3" }),
        ok: Type.Boolean(),
        error: Type.Optional(Type.String()),
        detail: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), { description: "http: status; email: messageId, recipient; s3: bucket, key" }),
        ),
      }),
      { description: "one per $.send.http/email/s3 call, in order; performed only when the run succeeded" },
    ),
    exited: Type.Union([Type.Object({ reason: Type.Union([Type.String(), Type.Null()]) }), Type.Null()], {
      description: "$.flow.exit(reason) ended the run",
    }),
    emits: Type.Array(Type.Object({ event: Type.Unknown(), name: Type.Union([Type.String(), Type.Null()]) }), {
      description: "$.send.emit / $.send.sse events (a run by hand keeps none: they are shown here only)",
    }),
    response: Type.Union(
      [Type.Object({ status: Type.Integer(), headers: Type.Record(Type.String(), Type.Unknown()), body: Type.Unknown() }), Type.Null()],
      { description: "what $.respond() was given (a run by hand answers no request: it is shown here only)" },
    ),
  },
  { $id: "ActionRunOutcome" },
);

/** A component the caller may use: a sc_ id, a key in the caller's namespace (org_id for an org's), or a registry key. */
function usableComponent(
  deps: Pick<ApiDeps, "access" | "catalog">,
  caller: Caller,
  keyOrId: string,
  orgId: string | undefined,
): LoadedComponent | undefined {
  const visible = (ownerId: string) => deps.access.canSee(caller, ownerId);
  if (/^sc_[0-9a-z]+$/.test(keyOrId)) return deps.catalog.usable(keyOrId, visible);
  const namespace = orgId ?? caller.userId;
  return (visible(namespace) ? deps.catalog.byKey(namespace, keyOrId) : undefined) ?? deps.catalog.byKey(REGISTRY_OWNER, keyOrId);
}

export function componentRoutes(
  deps: Pick<ApiDeps, "access" | "catalog" | "components" | "projector" | "actionRuns" | "propOptions">,
): Route[] {
  return [
    route({
      method: "POST",
      path: "/components",
      operationId: "saveComponent",
      summary: "Save component code (or code fetched from a URL)",
      tag: "components",
      body: componentCode,
      fields: Object.keys(Component.properties),
      errors: ["invalid_component", "component_url_unreachable", "not_found"],
      response: { description: "the saved component", schema: Data(Component) },
      async handle({ caller, body, query }) {
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        if (body.component_code === undefined && body.component_files === undefined && body.component_url === undefined) {
          throw invalid("give component_code, component_files or component_url", [
            { path: "body.component_code", message: "is required without component_files or component_url" },
          ]);
        }
        const saved = await written(deps, deps.catalog.save(ownerId, codeOf(body), { metadata: { by: caller.userId } }));
        return { body: { data: componentView(deps.components.get(saved.componentId)!) } };
      },
    }),
    route({
      method: "GET",
      path: "/components/registry/{key}",
      operationId: "getRegistryComponent",
      summary: "A published registry component by key (its highest version)",
      tag: "components",
      params: { key: Type.String({ maxLength: 200 }) },
      fields: Object.keys(Component.properties),
      errors: ["not_found"],
      response: { description: "the component", schema: Data(Component) },
      handle({ params }) {
        const component = deps.catalog.byKey(REGISTRY_OWNER, params.key);
        if (!component) throw notFound("registry component");
        return { body: { data: componentView(component) } };
      },
    }),
    route({
      method: "GET",
      path: "/components/{key_or_id}",
      operationId: "getComponent",
      summary: "A saved component by sc_ id, or by key in the caller's namespace (org_id for an org's)",
      tag: "components",
      params: { key_or_id: Type.String({ maxLength: 200 }) },
      fields: Object.keys(Component.properties),
      errors: ["not_found"],
      response: { description: "the component", schema: Data(Component) },
      handle({ caller, params, query }) {
        const keyOrId = params.key_or_id;
        const visible = (ownerId: string) => deps.access.canSee(caller, ownerId);
        let component: LoadedComponent | undefined;
        if (/^sc_[0-9a-z]+$/.test(keyOrId)) {
          component = deps.catalog.usable(keyOrId, visible);
        } else {
          const namespace = query.org_id ?? caller.userId;
          component = visible(namespace) ? deps.catalog.byKey(namespace, keyOrId) : undefined;
        }
        if (!component) throw notFound("component");
        return { body: { data: componentView(component) } };
      },
    }),
    route({
      method: "POST",
      path: "/components/{key_or_id}/props/{prop}/options",
      operationId: "listPropOptions",
      summary:
        "One page of a prop's options: its static list, or what its options() method returns for the props configured so far (extension)",
      tag: "components",
      params: {
        key_or_id: Type.String({ maxLength: 200, description: "sc_ id, a key of yours (org_id: of the org), or a registry key" }),
        prop: Type.String({ maxLength: 200 }),
      },
      body: {
        configured_props: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), {
            description: "values of the props configured so far (an app prop: a connected account, which options() reads through $auth)",
          }),
        ),
        page: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: "0-indexed page, passed to options({ page })" })),
        prev_context: Type.Optional(
          Type.Unknown({ description: "the context of the previous page's answer, passed to options({ prevContext })" }),
        ),
      },
      errors: ["not_found", "hook_failed", "run_timeout", "quota_exceeded", "backlog_full"],
      response: {
        description: "the options, and the context to ask for the next page with (null when there is none)",
        schema: Data(
          Type.Object({
            options: Type.Array(Type.Object({ label: Type.String(), value: Type.Unknown() })),
            context: Type.Unknown({ description: "e.g. {nextPageToken}; null when options() gave none" }),
          }),
        ),
      },
      async handle({ caller, params, body, query }) {
        const orgId = queryOrBody("org_id", query.org_id, body.org_id);
        const ownerId = deps.access.ownerForCreate(caller, orgId);
        const component = usableComponent(deps, caller, params.key_or_id, orgId);
        if (!component) throw notFound("component");
        const page = await deps.propOptions.page({
          component,
          prop: params.prop,
          configured: body.configured_props ?? {},
          page: body.page ?? 0,
          prevContext: body.prev_context ?? null,
          ownerId,
          userId: caller.userId,
        });
        return { body: { data: page } };
      },
    }),
    route({
      method: "POST",
      path: "/components/{id}/run",
      operationId: "runAction",
      summary: "Run an action once with the given props, as `pd` does: its return value, exports, summary, logs and sends (extension)",
      tag: "components",
      params: { id: Type.String({ maxLength: 200, description: "sc_ id, a key of yours (org_id: of the org), or a registry key" }) },
      body: {
        props: Type.Optional(
          Type.Record(Type.String(), Type.Unknown(), { description: "values of the action's props (and of its additionalProps)" }),
        ),
        steps: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "what run({ steps }) receives; default {}" })),
      },
      errors: ["not_found", "quota_exceeded", "backlog_full"],
      response: { description: "the run's outcome (a failed run answers 200 with ok false)", schema: Data(ActionRunOutcome) },
      async handle({ caller, params, body, query }) {
        const orgId = queryOrBody("org_id", query.org_id, body.org_id);
        const ownerId = deps.access.ownerForCreate(caller, orgId);
        const component = usableComponent(deps, caller, params.id, orgId);
        if (!component) throw notFound("component");
        if (component.meta.component.type !== "action") {
          throw invalid(`${component.key ?? component.id} is a source: deploy it with POST /v1/sources (only actions run here)`, [
            { path: "params.id", message: "is a source, not an action" },
          ]);
        }
        const ran = await written(
          deps,
          deps.actionRuns.run({
            component,
            configured: body.props ?? {},
            ...(body.steps !== undefined ? { steps: body.steps } : {}),
            ownerId,
            userId: caller.userId,
          }),
        );
        const { outcome } = ran;
        const exports = outcome.exports ?? {};
        return {
          body: {
            data: {
              invocation_id: ran.invocationId,
              ok: outcome.ok,
              return_value: outcome.returnValue ?? null,
              exports,
              summary: exports["$summary"] ?? null,
              logs: outcome.logs.map((l) => ({ ts: Math.round(l.ts), level: l.level, message: l.message })),
              error: outcome.error
                ? {
                    name: outcome.error.name,
                    message: outcome.error.message,
                    code: outcome.error.code,
                    ...(outcome.error.stack !== undefined ? { stack: outcome.error.stack } : {}),
                  }
                : null,
              sends: ran.sends,
              exited: outcome.exited ? { reason: outcome.exited.reason ?? null } : null,
              emits: outcome.emits.map((e) => ({ event: e.event, name: e.meta.name ?? null })),
              response: outcome.response ?? null,
            },
          },
        };
      },
    }),
  ];
}
