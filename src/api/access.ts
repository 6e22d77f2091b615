import type { Caller } from "./route.js";
import type { AccountsReadModel } from "../readModels/accounts.js";
import { notFound } from "../../commands/decider.js";

/**
 * The seed's organization rules in one place: a resource belongs to a user or to an org; its
 * owner and the org's members may see it; anyone else gets the same 404 as for an unknown id.
 */
export class Access {
  constructor(private readonly accounts: Pick<AccountsReadModel, "isMember">) {}

  canSee(caller: Caller, ownerId: string): boolean {
    if (ownerId === caller.userId) return true;
    return ownerId.startsWith("o_") && this.accounts.isMember(caller.userId, ownerId);
  }

  /** The resource when the caller may see it, else the 404 of an unknown id. */
  visible<T extends { ownerId: string }>(caller: Caller, resource: T | undefined, what: string): T {
    if (resource === undefined || !this.canSee(caller, resource.ownerId)) throw notFound(what);
    return resource;
  }

  /** An org (o_ id) the caller is a member of, else 404. */
  org(caller: Caller, orgId: string): string {
    if (!orgId.startsWith("o_") || !this.canSee(caller, orgId)) throw notFound("organization");
    return orgId;
  }

  /** The owner a new resource gets: the caller, or the org named by org_id if the caller is a member. */
  ownerForCreate(caller: Caller, orgId: string | undefined): string {
    if (orgId === undefined || orgId === "") return caller.userId;
    return this.org(caller, orgId);
  }
}
