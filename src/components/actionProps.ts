// The props of one action run, checked as users of published Pipedream actions expect: the
// component's own props (types, integer bounds, static options with labels, defaults, optional,
// propDefinition from an app file, app props with $auth or a connected account), plus the props its
// additionalProps() adds from the configured values. The checks are the sources' (src/sources/configuredProps.ts),
// run on the merged definitions; only the problem paths are the caller's (`body.props.count`,
// `steps[2].props.count`).
import type { ProblemDetail } from "../../commands/decider.js";
import { DomainError } from "../../commands/decider.js";
import type { ComponentRuntime } from "../runtime/componentRuntime.js";
import { validateAdditionalProps } from "../runtime/index.js";
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

/** additionalProps() runs in the sandbox like a hook, under a shorter deadline than a run. */
const ADDITIONAL_PROPS_TIMEOUT_MS = 60_000;
/** Additional props the instance cannot bind (their values are plain values, not app or db objects). */
const UNBINDABLE = new Set(["app", "app[]", "$.service.db"]);
/** Actions have no timers; the rule is only there because the checks are shared with sources. */
const RULES = { minTimerSeconds: 60 };

/**
 * The configured values checked against the action's props (and the props additionalProps()
 * adds), defaults applied and secrets opened: ready for Invocation.props. Throws
 * DomainError("invalid_request") whose details name `${pathPrefix}.<prop>` for each problem.
 */
export async function actionProps(
  deps: ActionPropsDeps,
  component: LoadedComponent,
  configured: Record<string, unknown>,
  context: { ownerId: string; pathPrefix: string },
): Promise<Record<string, unknown>> {
  const meta = component.meta.component;
  const { pathPrefix } = context;
  if (meta.type !== "action") {
    throw new DomainError("invalid_request", `${component.key ?? component.id} is a source, not an action: deploy it as a source`, [
      { path: pathPrefix, message: "the component is a source" },
    ]);
  }
  let props: readonly NormalizedProp[] = meta.props;
  if (meta.additionalProps) {
    // additionalProps() sees the component's own props, checked first; other names may be the props it adds.
    const own = new Set(props.map((p) => p.name));
    const ownValues = Object.fromEntries(Object.entries(configured).filter(([name]) => own.has(name)));
    const values = await check(deps, props, ownValues, context);
    props = merge(props, await additionalProps(deps, component, values, context));
  }
  return check(deps, props, configured, context);
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

async function additionalProps(
  deps: ActionPropsDeps,
  component: LoadedComponent,
  values: Record<string, unknown>,
  context: { ownerId: string; pathPrefix: string },
): Promise<NormalizedProp[]> {
  const fail = (message: string, details: ProblemDetail[] = [{ path: context.pathPrefix, message }]) =>
    new DomainError("invalid_request", message, details);
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
  if (!outcome.ok) {
    const error = outcome.error;
    throw fail(`the action's additionalProps() failed: ${error ? `${error.name}: ${error.message}` : "no detail"}`);
  }
  const { problems, props } = validateAdditionalProps(outcome.returnValue, "action");
  const unbindable = props.filter((p) => UNBINDABLE.has(p.type));
  const ownUnbindable = new Set(component.meta.component.props.filter((p) => UNBINDABLE.has(p.type)).map((p) => p.name));
  const all = [
    ...props.filter((p) => ownUnbindable.has(p.name)).map((p) => `props.${p.name}: the component's own ${p.name} prop cannot be redefined`),
    ...problems.map((p) => `${p.path}: ${p.message}`),
    ...unbindable.map(
      (p) => `props.${p.name}: additional props of type ${p.type} are not supported; declare it among the component's props`,
    ),
  ];
  if (all.length > 0) throw fail(`the action's additionalProps() returned invalid props: ${all.join("; ")}`);
  return props;
}

/** The component's props with the additional ones: a name it already has takes the new definition. */
function merge(own: readonly NormalizedProp[], more: readonly NormalizedProp[]): NormalizedProp[] {
  const byName = new Map(more.map((p) => [p.name, p]));
  const replaced = own.map((p) => byName.get(p.name) ?? p);
  const names = new Set(own.map((p) => p.name));
  return [...replaced, ...more.filter((p) => !names.has(p.name))];
}
