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
  ];
}
