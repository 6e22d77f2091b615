import type { Route, Caller } from "../route.js";
import type { Services } from "../services.js";
import { invalid, notFound } from "../errors.js";
import { canSee, ownerForCreate, requireVisible } from "../access.js";
import { pageBody, pageInfoSchema } from "../pagination.js";
import { componentCodeProperties } from "./components.js";
import { REGISTRY_OWNER } from "../../../commands/components/component.js";
import { viewProps } from "../../sources/configuredProps.js";
import type { SourceRow } from "../../readModels/sources.js";
import type { LoadedComponent } from "../../runner/components.js";

const sourceFields = ["id", "user_id", "component_id", "configured_props", "active", "created_at", "updated_at", "name", "name_slug"] as const;

export const sourceSchema = {
  type: "object",
  properties: {
    id: { type: "string", description: "dc_ id" },
    user_id: { type: "string", description: "who deployed it (create responses)" },
    component_id: { type: "string" },
    configured_props: { type: "object", description: "secrets redacted; timers as {cron, interval_seconds}; http as {endpoint_url}" },
    active: { type: "boolean" },
    created_at: { type: "integer" },
    updated_at: { type: "integer" },
    name: { type: "string" },
    name_slug: { type: "string" },
  },
};
const single = { type: "object", properties: { data: sourceSchema } };
const page = { type: "object", properties: { page_info: pageInfoSchema, data: { type: "array", items: sourceSchema } } };

const componentChoice = {
  component_id: { type: "string", maxLength: 100, description: "a saved component (sc_ id)" },
  ...componentCodeProperties,
  key: { type: "string", maxLength: 200, description: "a registry component key" },
};

export function sourceView(services: Services, row: SourceRow, withUser = false) {
  const component = services.components.get(row.component_id);
  const stored = JSON.parse(row.configured_props) as Record<string, unknown>;
  return {
    id: row.id,
    ...(withUser ? { user_id: row.creator_id } : {}),
    component_id: row.component_id,
    configured_props: component ? viewProps(component.meta.component.props, stored, services.endpointUrl(row.endpoint_id)) : {},
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    name: row.name,
    name_slug: row.name_slug,
  };
}

/** The source the caller may see, else the same 404 as an unknown id. */
export function visibleSource(services: Services, caller: Caller, id: string): SourceRow {
  const row = /^dc_[0-9a-z]+$/.test(id) ? services.sources.source(id) : undefined;
  requireVisible(services.accounts, caller, row?.owner_id, "source");
  return row!;
}

/** The seed's precedence: component_id, then component_code (component_url is then metadata), then component_url, then a registry key. */
async function resolveComponent(
  services: Services,
  caller: Caller,
  ownerId: string,
  body: Record<string, unknown>,
): Promise<LoadedComponent | undefined> {
  if (typeof body.component_id === "string") {
    const found = services.catalog.usable(body.component_id, (owner) => canSee(services.accounts, caller, owner));
    if (!found) throw notFound("component");
    return found;
  }
  if (typeof body.component_code === "string" || typeof body.component_url === "string") {
    const saved = await services.written(services.catalog.save(ownerId, {
      code: body.component_code as string | undefined,
      url: body.component_url as string | undefined,
    }, { by: caller.userId }));
    return services.components.get(saved.componentId);
  }
  if (typeof body.key === "string") {
    const row = services.catalog.byKey(REGISTRY_OWNER, body.key);
    if (!row) throw notFound("registry component");
    return services.components.get(row.id);
  }
  return undefined;
}

export function sourceRoutes(services: Services): Route[] {
  const list = (path: string, operationId: string, summary: string, owner: (caller: Caller, params: Record<string, unknown>) => string): Route => ({
    method: "GET",
    path,
    operationId,
    summary,
    tag: "sources",
    paginated: true,
    fields: sourceFields,
    ...(path.includes("{org_id}") ? { params: { org_id: { type: "string", maxLength: 100 } } } : {}),
    response: { description: "a page of sources, oldest first", schema: page },
    handle({ caller, params, page: request }) {
      const ownerId = owner(caller, params);
      const result = services.sources.sourcesOf(ownerId, request);
      return { body: pageBody(result, (row) => sourceView(services, row)) };
    },
  });

  return [
    {
      method: "POST",
      path: "/sources",
      operationId: "createSource",
      summary: "Deploy a component as a source (runs its deploy and activate hooks)",
      tag: "sources",
      body: {
        type: "object",
        properties: {
          ...componentChoice,
          name: { type: "string", minLength: 1, maxLength: 200 },
          configured_props: { type: "object" },
        },
        additionalProperties: false,
      },
      fields: sourceFields,
      response: { description: "the new source", schema: single },
      async handle({ caller, body, query }) {
        const ownerId = ownerForCreate(services.accounts, caller, query.org_id ?? body.org_id);
        const component = await resolveComponent(services, caller, ownerId, body);
        if (!component) {
          throw invalid("give one of component_id, component_code, component_url or key", [
            { path: "body.component_id", message: "one of component_id, component_code, component_url, key is required" },
          ]);
        }
        const deployed = await services.written(services.lifecycle.deploy({
          ownerId,
          creatorId: caller.userId,
          component,
          ...(typeof body.name === "string" ? { name: body.name } : {}),
          configuredProps: (body.configured_props as Record<string, unknown> | undefined) ?? {},
          metadata: { by: caller.userId },
        }));
        return { body: { data: sourceView(services, services.sources.source(deployed.sourceId)!, true) } };
      },
    },
    list("/users/me/sources", "listMySources", "The caller's sources", (caller) => caller.userId),
    list("/orgs/{org_id}/sources", "listOrgSources", "An organization's sources (members only)", (caller, params) => {
      const orgId = params.org_id as string;
      requireVisible(services.accounts, caller, orgId.startsWith("o_") ? orgId : undefined, "organization");
      return orgId;
    }),
    {
      method: "GET",
      path: "/sources/{id}",
      operationId: "getSource",
      summary: "One source (extension)",
      tag: "sources",
      params: { id: { type: "string", maxLength: 100 } },
      fields: sourceFields,
      response: { description: "the source", schema: single },
      handle({ caller, params }) {
        return { body: { data: sourceView(services, visibleSource(services, caller, params.id as string)) } };
      },
    },
    {
      method: "PUT",
      path: "/sources/{id}",
      operationId: "updateSource",
      summary: "Update a source: deactivate hook, replace code/props/name, activate hook; active=false pauses it",
      tag: "sources",
      params: { id: { type: "string", maxLength: 100 } },
      query: { force: { type: "boolean", description: "proceed even if a hook throws (the error is logged)" } },
      body: {
        type: "object",
        properties: {
          ...componentChoice,
          name: { type: "string", minLength: 1, maxLength: 200 },
          active: { type: "boolean", default: true },
          configured_props: { type: "object" },
        },
        additionalProperties: false,
      },
      fields: sourceFields,
      response: { description: "the updated source", schema: single },
      async handle({ caller, params, body, query }) {
        const row = visibleSource(services, caller, params.id as string);
        const component = (await resolveComponent(services, caller, row.owner_id, body)) ?? services.components.get(row.component_id)!;
        const updated = await services.written(services.lifecycle.update({
          row,
          component,
          ...(typeof body.name === "string" ? { name: body.name } : {}),
          ...(body.configured_props !== undefined ? { configuredProps: body.configured_props as Record<string, unknown> } : {}),
          active: body.active !== false,
          force: query.force === true,
          metadata: { by: caller.userId },
        }));
        return { body: { data: sourceView(services, services.sources.source(updated.sourceId)!) } };
      },
    },
    {
      method: "DELETE",
      path: "/sources/{id}",
      operationId: "deleteSource",
      summary: "Delete a source: deactivate hook, then the source, its events, logs, endpoint and timer",
      tag: "sources",
      params: { id: { type: "string", maxLength: 100 } },
      query: { force: { type: "boolean", description: "delete even if the deactivate hook throws" } },
      response: { status: 204, description: "deleted" },
      async handle({ caller, params, query }) {
        const row = visibleSource(services, caller, params.id as string);
        await services.written(services.lifecycle.delete({ row, force: query.force === true, metadata: { by: caller.userId } }));
        return { status: 204 };
      },
    },
  ];
}
