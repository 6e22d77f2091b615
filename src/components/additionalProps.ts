// A component's additionalProps(): the props it adds from the values configured so far (Pipedream
// runs it when a prop marked `reloadProps` is set). Actions call it for every run's props; sources
// once per deploy or update, and keep what it returned with the source (a source may add its
// `$.interface.http` or `$.interface.timer` this way, as the published GitHub sources do).
import { DomainError, type ProblemDetail } from "../../commands/decider.js";
import { validateAdditionalProps } from "../runtime/index.js";
import type { InvocationOutcome, NormalizedProp } from "../runtime/types.js";
import type { LoadedComponent } from "./componentCache.js";

/** additionalProps() runs in the sandbox like a hook, under a shorter deadline than a run. */
export const ADDITIONAL_PROPS_TIMEOUT_MS = 60_000;
/** Additional props an instance cannot bind (their values are plain values, not app or db objects). */
const UNBINDABLE = new Set(["app", "app[]", "$.service.db", "dir"]);
/** A source keeps what its additionalProps() returned in its own events: bounded like a prop's value (64 KB). */
const MAX_ADDITIONAL_PROPS = 100;
const MAX_ADDITIONAL_PROPS_BYTES = 64 * 1024;

/**
 * The props an additionalProps() call described (`outcome`, its run), checked as the component's
 * own props are; throws DomainError("invalid_request") with `path` as the problem's path.
 */
export function additionalPropsOf(outcome: InvocationOutcome, component: LoadedComponent, path: string): NormalizedProp[] {
  const kind = component.meta.component.type;
  const fail = (message: string, details: ProblemDetail[] = [{ path, message }]) => new DomainError("invalid_request", message, details);
  if (!outcome.ok) {
    const error = outcome.error;
    throw fail(`the ${kind}'s additionalProps() failed: ${error ? `${error.name}: ${error.message}` : "no detail"}`);
  }
  const { problems, props } = validateAdditionalProps(outcome.returnValue, kind);
  const unbindable = props.filter((p) => UNBINDABLE.has(p.type));
  const ownUnbindable = new Set(component.meta.component.props.filter((p) => UNBINDABLE.has(p.type)).map((p) => p.name));
  const all = [
    ...props.filter((p) => ownUnbindable.has(p.name)).map((p) => `props.${p.name}: the component's own ${p.name} prop cannot be redefined`),
    ...problems.map((p) => `${p.path}: ${p.message}`),
    ...unbindable.map(
      (p) => `props.${p.name}: additional props of type ${p.type} are not supported; declare it among the component's props`,
    ),
  ];
  if (props.length > MAX_ADDITIONAL_PROPS) all.push(`it returned ${props.length} props, at most ${MAX_ADDITIONAL_PROPS} are allowed`);
  else if (Buffer.byteLength(JSON.stringify(props)) > MAX_ADDITIONAL_PROPS_BYTES) {
    all.push(`their definitions are over ${MAX_ADDITIONAL_PROPS_BYTES / 1024} KB`);
  }
  if (all.length > 0) throw fail(`the ${kind}'s additionalProps() returned invalid props: ${all.join("; ")}`);
  return props;
}

/** The component's props with the additional ones: a name it already has takes the new definition. */
/** The HTTP interface of a component with the props additionalProps() added: whether it has one, and answers itself. */
export function httpInterface(
  own: readonly NormalizedProp[],
  more: readonly NormalizedProp[] | undefined,
): { readonly customResponse: boolean } | undefined {
  const http = withAdditionalProps(own, more).find((p) => p.type === "$.interface.http");
  return http && { customResponse: http.customResponse === true };
}

export function withAdditionalProps(
  own: readonly NormalizedProp[],
  more: readonly NormalizedProp[] | undefined,
): readonly NormalizedProp[] {
  if (!more || more.length === 0) return own;
  const byName = new Map(more.map((p) => [p.name, p]));
  const replaced = own.map((p) => byName.get(p.name) ?? p);
  const names = new Set(own.map((p) => p.name));
  return [...replaced, ...more.filter((p) => !names.has(p.name))];
}

/** The configured values of the component's own props only: what additionalProps() is called with. */
export function ownValues(component: LoadedComponent, configured: Record<string, unknown>): Record<string, unknown> {
  const own = new Set(component.meta.component.props.map((p) => p.name));
  return Object.fromEntries(Object.entries(configured).filter(([name]) => own.has(name)));
}
