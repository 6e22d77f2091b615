import type { Route } from "../route.js";
import type { Services } from "../services.js";
import { invalid, notFound } from "../errors.js";
import { canSee, ownerForCreate } from "../access.js";
import { REGISTRY_OWNER } from "../../../commands/components/component.js";
import type { LoadedComponent } from "../../runner/components.js";

const componentFields = ["id", "key", "code", "code_hash", "name", "version", "description", "configurable_props", "created_at", "updated_at"] as const;

export const componentSchema = {
  type: "object",
  properties: {
    id: { type: "string", description: "sc_ id" },
    key: { type: ["string", "null"] },
    code: { type: "string" },
    code_hash: { type: "string", description: "SHA-256 of the code, hex" },
    name: { type: "string" },
    version: { type: "string" },
    description: { type: ["string", "null"] },
    configurable_props: { type: "array", items: { type: "object" } },
    created_at: { type: "integer" },
    updated_at: { type: "integer" },
  },
};
const single = { type: "object", properties: { data: componentSchema } };

export function componentView(component: LoadedComponent) {
  const row = component.row;
  return {
    id: row.id,
    key: row.key,
    code: row.code,
    code_hash: row.code_hash,
    name: row.name,
    version: row.version,
    description: row.description,
    configurable_props: component.configurableProps,
    created_at: row.created_at,
    updated_at: row.created_at,
  };
}

/** Bodies that carry component code: component_code wins, component_url is then only metadata. */
export const componentCodeProperties = {
  component_code: { type: "string", minLength: 1, maxLength: 512 * 1024, description: "full component code" },
  component_url: { type: "string", format: "uri", pattern: "^https?://", maxLength: 2048, description: "where to fetch the code" },
};

export function componentRoutes(services: Services): Route[] {
  return [
    {
      method: "POST",
      path: "/components",
      operationId: "saveComponent",
      summary: "Save component code (or code fetched from a URL)",
      tag: "components",
      body: { type: "object", properties: componentCodeProperties, additionalProperties: false },
      fields: componentFields,
      response: { description: "the saved component", schema: single },
      async handle({ caller, body, query }) {
        const ownerId = ownerForCreate(services.accounts, caller, body.org_id ?? query.org_id);
        const code = body.component_code as string | undefined;
        const url = body.component_url as string | undefined;
        if (code === undefined && url === undefined) {
          throw invalid("give component_code or component_url", [{ path: "body.component_code", message: "is required without component_url" }]);
        }
        const saved = await services.written(services.catalog.save(ownerId, { code, url }, { by: caller.userId }));
        return { body: { data: componentView(services.components.get(saved.componentId)!) } };
      },
    },
    {
      method: "GET",
      path: "/components/registry/{key}",
      operationId: "getRegistryComponent",
      summary: "A published registry component by key (its highest version)",
      tag: "components",
      params: { key: { type: "string", maxLength: 200 } },
      fields: componentFields,
      response: { description: "the component", schema: single },
      handle({ params }) {
        const row = services.catalog.byKey(REGISTRY_OWNER, params.key as string);
        if (!row) throw notFound("registry component");
        return { body: { data: componentView(services.components.get(row.id)!) } };
      },
    },
    {
      method: "GET",
      path: "/components/{key_or_id}",
      operationId: "getComponent",
      summary: "A saved component by sc_ id, or by key in the caller's namespace (org_id for an org's)",
      tag: "components",
      params: { key_or_id: { type: "string", maxLength: 200 } },
      fields: componentFields,
      response: { description: "the component", schema: single },
      handle({ caller, params, query }) {
        const keyOrId = params.key_or_id as string;
        const visible = (ownerId: string) => canSee(services.accounts, caller, ownerId);
        let component: LoadedComponent | undefined;
        if (/^sc_[0-9a-z]+$/.test(keyOrId)) {
          component = services.catalog.usable(keyOrId, visible);
        } else {
          const namespace = (query.org_id as string | undefined) ?? caller.userId;
          const row = visible(namespace) ? services.catalog.byKey(namespace, keyOrId) : undefined;
          component = row && services.components.get(row.id);
        }
        if (!component) throw notFound("component");
        return { body: { data: componentView(component) } };
      },
    },
  ];
}
