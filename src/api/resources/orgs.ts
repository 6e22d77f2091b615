import { Type } from "@sinclair/typebox";
import { route, type Route } from "../route.js";
import type { ApiDeps } from "../deps.js";
import { Data } from "../pagination.js";

export const Org = Type.Object({ id: Type.String(), name: Type.String(), orgname: Type.String(), email: Type.String() }, { $id: "Org" });

export function orgRoutes(deps: Pick<ApiDeps, "access" | "accountsView">): Route[] {
  return [
    route({
      method: "GET",
      path: "/orgs/{org_id}",
      operationId: "getOrg",
      summary: "An organization the caller is a member of (extension)",
      tag: "orgs",
      params: { org_id: Type.String({ maxLength: 100 }) },
      fields: Object.keys(Org.properties),
      errors: ["not_found"],
      response: { description: "the organization", schema: Data(Org) },
      handle({ caller, params }) {
        const org = deps.accountsView.org(deps.access.org(caller, params.org_id))!;
        return { body: { data: { id: org.id, name: org.name, orgname: org.orgname, email: org.email } } };
      },
    }),
  ];
}
