import type { Route } from "../route.js";
import type { Services } from "../services.js";
import { requireVisible } from "../access.js";

const orgSchema = {
  type: "object",
  properties: { id: { type: "string" }, name: { type: "string" }, orgname: { type: "string" }, email: { type: "string" } },
};

export function orgRoutes(services: Services): Route[] {
  return [
    {
      method: "GET",
      path: "/orgs/{org_id}",
      operationId: "getOrg",
      summary: "An organization the caller is a member of (extension)",
      tag: "orgs",
      params: { org_id: { type: "string", maxLength: 100 } },
      fields: ["id", "name", "orgname", "email"],
      response: { description: "the organization", schema: { type: "object", properties: { data: orgSchema } } },
      handle({ caller, params }) {
        const orgId = params.org_id as string;
        requireVisible(services.accounts, caller, orgId.startsWith("o_") ? orgId : undefined, "organization");
        const org = services.accounts.org(orgId)!;
        return { body: { data: { id: org.id, name: org.name, orgname: org.orgname, email: org.email } } };
      },
    },
  ];
}
