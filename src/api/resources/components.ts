import { Type } from "@sinclair/typebox";
import { route, type Route } from "../route.js";
import { written, type ApiDeps } from "../deps.js";
import { Data } from "../pagination.js";
import { invalid, notFound } from "../../../commands/decider.js";
import { REGISTRY_OWNER } from "../../../commands/components/component.js";
import type { LoadedComponent } from "../../components/componentCache.js";

export const ConfigurableProp = Type.Object(
  {
    name: Type.String(),
    type: Type.String(),
    label: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    default: Type.Optional(Type.Unknown()),
    app: Type.Optional(Type.String({ description: "for app-type props" })),
    optional: Type.Optional(Type.Boolean()),
    secret: Type.Optional(Type.Boolean()),
    min: Type.Optional(Type.Integer()),
    max: Type.Optional(Type.Integer()),
    options: Type.Optional(Type.Array(Type.Unknown())),
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

/** Bodies that carry component code: component_code wins, component_url is then only metadata. */
export const componentCode = {
  component_code: Type.Optional(Type.String({ minLength: 1, maxLength: 512 * 1024, description: "full component code" })),
  component_url: Type.Optional(
    Type.String({ format: "uri", pattern: "^https?://", maxLength: 2048, description: "where to fetch the code" }),
  ),
};

export function componentRoutes(deps: Pick<ApiDeps, "access" | "catalog" | "components" | "projector">): Route[] {
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
        const ownerId = deps.access.ownerForCreate(caller, body.org_id ?? query.org_id);
        const { component_code: code, component_url: url } = body;
        if (code === undefined && url === undefined) {
          throw invalid("give component_code or component_url", [
            { path: "body.component_code", message: "is required without component_url" },
          ]);
        }
        const saved = await written(
          deps,
          deps.catalog.save(
            ownerId,
            { ...(code !== undefined ? { code } : {}), ...(url !== undefined ? { url } : {}) },
            { metadata: { by: caller.userId } },
          ),
        );
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
  ];
}
