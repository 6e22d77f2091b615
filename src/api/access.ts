import type { Caller } from "./route.js";
import type { AccountsReadModel } from "../readModels/accounts.js";
import { notFound } from "./errors.js";

/**
 * The seed's organization rules in one place: a resource belongs to a user or to an org; its
 * owner and the org's members may see it; anyone else gets the same 404 as for an unknown id.
 */
export function canSee(accounts: AccountsReadModel, caller: Caller, ownerId: string): boolean {
  if (ownerId === caller.userId) return true;
  return ownerId.startsWith("o_") && accounts.isMember(caller.userId, ownerId);
}

export function requireVisible(accounts: AccountsReadModel, caller: Caller, ownerId: string | undefined, what: string): void {
  if (ownerId === undefined || !canSee(accounts, caller, ownerId)) throw notFound(what);
}

/** The owner a new resource gets: the caller, or the org named by org_id if the caller is a member. */
export function ownerForCreate(accounts: AccountsReadModel, caller: Caller, orgId: unknown): string {
  if (orgId === undefined || orgId === "") return caller.userId;
  if (typeof orgId !== "string" || !accounts.isMember(caller.userId, orgId)) throw notFound("organization");
  return orgId;
}
