// The props of one action run, checked as users of published Pipedream actions expect: the
// component's own props (types, integer bounds, static options with labels, defaults, optional,
// propDefinition from an app file, app props with $auth or a connected account), plus the props its
// additionalProps() adds from the configured values. The checks are the sources' (src/sources/configuredProps.ts),
// run on the merged definitions; only the problem paths are the caller's (`body.props.count`,
// `steps[2].props.count`).
import { DomainError } from "../../commands/decider.js";
import type { ComponentRuntime } from "../runtime/componentRuntime.js";
import { ADDITIONAL_PROPS_TIMEOUT_MS, additionalPropsOf, ownValues, withAdditionalProps } from "./additionalProps.js";
import type { NormalizedProp } from "../runtime/types.js";
import type { Sealer } from "../secrets/sealer.js";
import { checkConfiguredProps, MissingAccountError, openPropsWithAccounts } from "../sources/configuredProps.js";
import type { ConnectedAccounts } from "../connectedAccounts/connectedAccounts.js";
import { isAccountBinding } from "../../commands/connectedAccounts/connectedAccount.js";
import { newId } from "../ids.js";
import type { LoadedComponent } from "./componentCache.js";

export interface ActionPropsDeps {
  /** Runs additionalProps() in the sandbox. */
  readonly runtime: Pick<ComponentRuntime, "invoke">;
  /** Secrets and app credentials are sealed and opened again on their way through the shared checks. */
  readonly sealer: Sealer;
  /** App props bound to connected accounts ({"authProvisionId": "apn_…"}): checked, then opened. */
  readonly accounts: Pick<ConnectedAccounts, "checkBindings" | "sealedAuth">;
}

/** Actions have no timers; the rule is only there because the checks are shared with sources. */
const RULES = { minTimerSeconds: 60 };

/** An action run's props, checked. */
export interface CheckedActionProps {
  /** Defaults applied and secrets opened: ready for Invocation.props. */
  readonly values: Record<string, unknown>;
  /**
   * The props additionalProps() added for these values (Invocation.additionalProps): the run binds
   * them by their type as it binds the component's own (an http_request gets its execute()).
   */
  readonly added: readonly NormalizedProp[];
}

/**
 * The configured values checked against the action's props (and the props additionalProps()
 * adds). Throws DomainError("invalid_request") whose details name `${pathPrefix}.<prop>` for each
 * problem.
 */
export async function actionProps(
  deps: ActionPropsDeps,
  component: LoadedComponent,
  configured: Record<string, unknown>,
  context: { ownerId: string; pathPrefix: string },
): Promise<CheckedActionProps> {
  const meta = component.meta.component;
  const { pathPrefix } = context;
  if (meta.type !== "action") {
    throw new DomainError("invalid_request", `${component.key ?? component.id} is a source, not an action: deploy it as a source`, [
      { path: pathPrefix, message: "the component is a source" },
    ]);
  }
  let props: readonly NormalizedProp[] = meta.props;
  let added: readonly NormalizedProp[] = [];
  if (meta.additionalProps) {
    // additionalProps() sees the component's own props, checked first; other names may be the props it adds.
    const values = await check(deps, props, ownValues(component, configured), context);
    const outcome = await deps.runtime.invoke({
      invocationId: newId("inv"),
      ownerId: context.ownerId,
      sourceId: component.id,
      codeHash: component.codeHash,
      bundleHash: component.meta.bundleHash,
      bundle: component.meta.bundle,
      method: "additionalProps",
      props: values,
      db: {},
      limits: { timeoutMs: ADDITIONAL_PROPS_TIMEOUT_MS },
    });
    added = additionalPropsOf(outcome, component, context.pathPrefix);
    props = withAdditionalProps(props, added);
  }
  return { values: await check(deps, props, configured, context), added };
}

/** The shared checks (and the connected accounts app props bind), with the caller's paths; the values opened. Prop options use them too. */
export async function check(
  deps: ActionPropsDeps,
  props: readonly NormalizedProp[],
  configured: Record<string, unknown>,
  context: { ownerId: string; pathPrefix: string },
): Promise<Record<string, unknown>> {
  const at = (path: string) => path.replace(/^configured_props(?=\.|\[|$)/, context.pathPrefix);
  const { stored, problems } = checkConfiguredProps(props, configured, deps.sealer, RULES);
  const details = problems.map((p) => ({ path: at(p.path), message: p.message }));
  for (const prop of props) {
    const value = stored[prop.name];
    if ((prop.type !== "app" && prop.type !== "app[]") || !(Array.isArray(value) ? value : [value]).some(isAccountBinding)) continue;
    try {
      await deps.accounts.checkBindings(context.ownerId, [prop], { [prop.name]: value });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // An account that is gone or someone else's is a wrong value here, like any other.
      const path = `${context.pathPrefix}.${prop.name}`;
      details.push(
        ...(error.code === "not_found"
          ? [{ path, message: "binds a connected account that does not exist (or is not yours)" }]
          : (error.details ?? [{ path, message: error.message }]).map((d) => ({ path: at(d.path), message: d.message }))),
      );
    }
  }
  if (details.length > 0) throw new DomainError("invalid_request", `${details[0].path} ${details[0].message}`, details);
  try {
    return await openPropsWithAccounts(stored, deps.sealer, (id) => deps.accounts.sealedAuth(id));
  } catch (error) {
    // Deleted between the check and now.
    if (!(error instanceof MissingAccountError)) throw error;
    throw new DomainError("invalid_request", at(error.message), [{ path: context.pathPrefix, message: at(error.message) }]);
  }
}
