import { Type } from "@sinclair/typebox";
import { NOT_BLANK } from "../../validation.js";
import { route, type Caller, type Route, queryOrBody } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data, Paged, pageBody } from "../pagination.js";
import { codeOf, componentCode } from "./components.js";
import { invalid, notFound } from "../../../commands/decider.js";
import { REGISTRY_OWNER } from "../../../commands/components/component.js";
import { viewProps } from "../../sources/configuredProps.js";
import type { Source as SourceView } from "../../readModels/sources.js";
import { withAdditionalProps } from "../../components/additionalProps.js";
import type { LoadedComponent } from "../../components/componentCache.js";
import type { HandleOptions } from "../../../commands/handler.js";

export const Source = Type.Object(
  {
    id: Type.String({ description: "dc_ id" }),
    user_id: Type.Optional(Type.String({ description: "who deployed it (create responses)" })),
    component_id: Type.String(),
    configured_props: Type.Record(Type.String(), Type.Unknown(), {
      description: "secrets redacted; timers as {cron, interval_seconds, timezone}; http as {endpoint_url}",
    }),
    active: Type.Boolean(),
    created_at: Type.Integer(),
    updated_at: Type.Integer(),
    name: Type.String(),
    name_slug: Type.String(),
  },
  { $id: "Source" },
);

const SOURCE_ID = Type.String({ maxLength: 100, description: "dc_ id" });

const componentChoice = {
  component_id: Type.Optional(Type.String({ maxLength: 100, description: "a saved component (sc_ id)" })),
  ...componentCode,
  key: Type.Optional(Type.String({ maxLength: 200, description: "a registry component key" })),
};

type SourceDeps = Pick<ApiDeps, "access" | "sources" | "components" | "catalog" | "lifecycle" | "projector" | "endpointUrl">;

export function sourceView(deps: Pick<ApiDeps, "components" | "endpointUrl">, source: SourceView, withUser = false) {
  const component = deps.components.get(source.componentId);
  return {
    id: source.id,
    ...(withUser ? { user_id: source.creatorId } : {}),
    component_id: source.componentId,
    configured_props: component
      ? viewProps(
          withAdditionalProps(component.meta.component.props, source.additionalProps),
          source.configuredProps,
          deps.endpointUrl(source.endpointId),
        )
      : {},
    active: source.active,
    created_at: source.createdAt,
    updated_at: source.updatedAt,
    name: source.name,
    name_slug: source.nameSlug,
  };
}

/** The source the caller may see, else the same 404 as an unknown id. */
export function visibleSource(deps: Pick<ApiDeps, "access" | "sources">, caller: Caller, id: string): SourceView {
  return deps.access.visible(caller, /^dc_[0-9a-z]+$/.test(id) ? deps.sources.source(id) : undefined, "source");
}

/** A component to deploy, and when its code came with the request, how to save it once the deploy is accepted. */
interface Resolved {
  readonly component: LoadedComponent;
  readonly saveComponent?: (options: HandleOptions) => Promise<{ position: number | undefined }>;
}

/**
 * The seed's precedence: component_id, then component_code or component_files (component_url is
 * then metadata), then component_url, then a registry key. Code is prepared here but saved by the
 * lifecycle only once the deploy passed its checks and hooks: a refused deploy saves nothing.
 */
async function resolveComponent(
  deps: SourceDeps,
  caller: Caller,
  ownerId: string,
  body: {
    component_id?: string | undefined;
    component_code?: string | undefined;
    component_files?: Record<string, string> | undefined;
    component_entry?: string | undefined;
    component_url?: string | undefined;
    key?: string | undefined;
  },
): Promise<Resolved | undefined> {
  if (body.component_id !== undefined) {
    const found = deps.catalog.usable(body.component_id, (owner) => deps.access.canSee(caller, owner));
    if (!found) throw notFound("component");
    return { component: found };
  }
  if (body.component_code !== undefined || body.component_files !== undefined || body.component_url !== undefined) {
    const unsaved = await deps.catalog.prepare(ownerId, codeOf(body));
    return { component: unsaved.component, saveComponent: (options) => deps.catalog.commit(unsaved, options) };
  }
  if (body.key !== undefined) {
    const found = deps.catalog.byKey(REGISTRY_OWNER, body.key);
    if (!found) throw notFound("registry component");
    return { component: found };
  }
  return undefined;
}

export function sourceRoutes(deps: SourceDeps): Route[] {
  const fields = Object.keys(Source.properties);
  return [
    route({
      method: "POST",
      path: "/sources",
      operationId: "createSource",
      summary: "Deploy a component as a source (runs its deploy and activate hooks)",
      tag: "sources",
      body: {
        ...componentChoice,
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK })),
        configured_props: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      fields,
      errors: ["invalid_component", "hook_failed", "component_url_unreachable", "not_found"],
      response: { description: "the new source", schema: Data(Source) },
      async handle({ caller, body, query }) {
        const ownerId = deps.access.ownerForCreate(caller, queryOrBody("org_id", query.org_id, body.org_id));
        const resolved = await resolveComponent(deps, caller, ownerId, body);
        if (!resolved) {
          throw invalid("give one of component_id, component_code, component_files, component_url or key", [
            { path: "body.component_id", message: "one of component_id, component_code, component_files, component_url, key is required" },
          ]);
        }
        const deployed = await written(
          deps,
          deps.lifecycle.deploy({
            ownerId,
            creatorId: caller.userId,
            ...resolved,
            ...(body.name !== undefined ? { name: body.name } : {}),
            configuredProps: body.configured_props ?? {},
            metadata: { by: caller.userId },
          }),
        );
        return { body: { data: sourceView(deps, deps.sources.source(deployed.sourceId)!, true) } };
      },
    }),
    route({
      method: "GET",
      path: "/users/me/sources",
      operationId: "listMySources",
      summary: "The caller's sources",
      tag: "sources",
      paginated: true,
      fields,
      response: { description: "a page of sources, oldest first", schema: Paged(Source) },
      handle: ({ caller, page }) => ({ body: pageBody(deps.sources.sourcesOf(caller.userId, page), (s) => sourceView(deps, s)) }),
    }),
    route({
      method: "GET",
      path: "/orgs/{org_id}/sources",
      operationId: "listOrgSources",
      summary: "An organization's sources (members only)",
      tag: "sources",
      params: { org_id: Type.String({ maxLength: 100 }) },
      paginated: true,
      fields,
      errors: ["not_found"],
      response: { description: "a page of sources, oldest first", schema: Paged(Source) },
      handle: ({ caller, params, page }) => ({
        body: pageBody(deps.sources.sourcesOf(deps.access.org(caller, params.org_id), page), (s) => sourceView(deps, s)),
      }),
    }),
    route({
      method: "GET",
      path: "/sources/{id}",
      operationId: "getSource",
      summary: "One source (extension)",
      tag: "sources",
      params: { id: SOURCE_ID },
      fields,
      errors: ["not_found"],
      response: { description: "the source", schema: Data(Source) },
      handle: ({ caller, params }) => ({ body: { data: sourceView(deps, visibleSource(deps, caller, params.id)) } }),
    }),
    route({
      method: "PUT",
      path: "/sources/{id}",
      operationId: "updateSource",
      summary: "Update a source: deactivate hook, replace code/props/name, activate hook; active=false pauses it",
      tag: "sources",
      params: { id: SOURCE_ID },
      query: { force: Type.Optional(Type.Boolean({ description: "proceed even if a hook throws (the error is logged)" })) },
      body: {
        ...componentChoice,
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK })),
        active: Type.Optional(Type.Boolean({ default: true })),
        configured_props: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      fields,
      errors: ["invalid_component", "hook_failed", "not_found"],
      response: { description: "the updated source", schema: Data(Source) },
      async handle({ caller, params, body, query }) {
        const source = visibleSource(deps, caller, params.id);
        const previousComponent = deps.components.get(source.componentId)!;
        const resolved = (await resolveComponent(deps, caller, source.ownerId, body)) ?? { component: previousComponent };
        const updated = await written(
          deps,
          deps.lifecycle.update({
            source,
            ...resolved,
            previousComponent,
            ...(body.name !== undefined ? { name: body.name } : {}),
            ...(body.configured_props !== undefined ? { configuredProps: body.configured_props } : {}),
            active: body.active !== false,
            force: query.force === true,
            metadata: { by: caller.userId },
          }),
        );
        return { body: { data: sourceView(deps, deps.sources.source(updated.sourceId)!) } };
      },
    }),
    route({
      method: "DELETE",
      path: "/sources/{id}",
      operationId: "deleteSource",
      summary: "Delete a source: deactivate hook, then the source, its events, logs, endpoint and timer",
      tag: "sources",
      params: { id: SOURCE_ID },
      query: { force: Type.Optional(Type.Boolean({ description: "delete even if the deactivate hook throws" })) },
      errors: ["hook_failed", "not_found"],
      response: { status: 204, description: "deleted" },
      async handle({ caller, params, query }) {
        const source = visibleSource(deps, caller, params.id);
        await written(
          deps,
          deps.lifecycle.delete({
            source,
            component: deps.components.get(source.componentId)!,
            force: query.force === true,
            metadata: { by: caller.userId },
          }),
        );
        return { status: 204 };
      },
    }),
  ];
}
