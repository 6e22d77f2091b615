import { Cron } from "croner";
import type { NormalizedProp, PropOption } from "../runtime/types.js";
import type { ProblemDetail as ErrorDetail } from "../../commands/decider.js";
import { isSealed, type Sealed, type Sealer } from "../secrets/sealer.js";
import { isAccountBinding } from "../../commands/connectedAccounts/connectedAccount.js";
import { readHttpRequest } from "../runtime/httpRequestProp.js";

/** The seed's limit on one configured prop value (its JSON text). */
export const MAX_PROP_BYTES = 64 * 1024;
/** What a secret looks like in API answers; sending it back on PUT keeps the stored value. */
export const REDACTED = "[redacted]";

/** A cron's `timezone` is an IANA zone name; without one the cron is read in UTC. */
export type TimerValue = { intervalSeconds: number } | { cron: string; timezone?: string };

/** Whether the platform knows the IANA time zone (as Intl does: "Europe/Paris", "UTC", …). */
function knownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The croner options a timer's cron is read with. */
export const cronOptions = (timer: { timezone?: string }) => ({ paused: true, timezone: timer.timezone ?? "UTC" });

export interface PropRules {
  /** Smallest timer interval a source may ask for. */
  readonly minTimerSeconds: number;
}

export interface CheckedProps {
  /** As stored in the log: secrets and app credentials sealed. */
  readonly stored: Record<string, unknown>;
  readonly problems: ErrorDetail[];
}

const path = (name: string, rest = "") => `configured_props.${name}${rest}`;
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
const optionValue = (o: PropOption) => (typeof o === "object" && o !== null ? o.value : o);
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * An http_request's `auth` holds credentials: stored sealed like a secret, answered redacted, opened
 * for the run. Sent back redacted (or as stored), the stored credentials are kept.
 */
function sealRequestAuth(
  value: Record<string, unknown>,
  previous: unknown,
  sealer: Sealer,
): { checkable: Record<string, unknown>; seal: (checked: Record<string, unknown>) => Record<string, unknown> } {
  const old = isPlainObject(previous) && isSealed(previous.auth) ? previous.auth : undefined;
  const auth = value.auth;
  if (old !== undefined && (auth === REDACTED || (isSealed(auth) && JSON.stringify(auth) === JSON.stringify(old)))) {
    const { auth: _kept, ...rest } = value;
    void _kept;
    return { checkable: rest, seal: (checked) => ({ ...checked, auth: old }) };
  }
  return {
    checkable: value,
    seal: (checked) => (isPlainObject(checked.auth) ? { ...checked, auth: sealer.seal(checked.auth) } : checked),
  };
}

/** A value as user code sees it: sealed values opened, in arrays and in an http_request's auth. */
function openValue(v: unknown, sealer: Sealer): unknown {
  if (isSealed(v)) return sealer.open(v);
  if (Array.isArray(v)) return v.map((item) => openValue(item, sealer));
  if (isPlainObject(v) && isSealed(v.auth)) return { ...v, auth: sealer.open(v.auth) };
  return v;
}

function checkTimer(name: string, value: unknown, rules: PropRules, problems: ErrorDetail[]): TimerValue | undefined {
  if (!isPlainObject(value)) {
    problems.push({
      path: path(name),
      message: "must be an object with intervalSeconds (integer) or cron (string, with an optional timezone)",
    });
    return undefined;
  }
  const keys = Object.keys(value).filter((k) => value[k] !== undefined && value[k] !== null);
  const unknown = keys.filter((k) => k !== "intervalSeconds" && k !== "cron" && k !== "interval_seconds" && k !== "timezone");
  if (unknown.length > 0) problems.push({ path: path(name), message: `unknown timer fields: ${unknown.join(", ")}` });
  const interval = value.intervalSeconds ?? value.interval_seconds;
  const cron = value.cron;
  if ((interval === undefined || interval === null) === (cron === undefined || cron === null)) {
    problems.push({ path: path(name), message: "give exactly one of intervalSeconds or cron" });
    return undefined;
  }
  const timezone = value.timezone ?? undefined;
  if (timezone !== undefined && (cron === undefined || cron === null)) {
    problems.push({ path: path(name, ".timezone"), message: "applies to a cron only (an interval is the same in every zone)" });
    return undefined;
  }
  if (timezone !== undefined && (typeof timezone !== "string" || timezone.length > 64 || !knownTimeZone(timezone))) {
    problems.push({
      path: path(name, ".timezone"),
      message: 'must be an IANA time zone name such as "Europe/Paris" or "America/New_York"',
    });
    return undefined;
  }
  if (cron !== undefined && cron !== null) {
    if (typeof cron !== "string") {
      problems.push({ path: path(name, ".cron"), message: "must be a string" });
      return undefined;
    }
    const timer = { cron, ...(timezone !== undefined ? { timezone: timezone } : {}) };
    try {
      // The shortest of several gaps: the first one alone depends on when the request comes ("0,20 * * * * *" at second 5).
      const runs = new Cron(cron, cronOptions(timer)).nextRuns(16);
      if (runs.length < 2) throw new Error("it never fires");
      const gap = Math.min(...runs.slice(1).map((run, i) => (run.getTime() - runs[i].getTime()) / 1000));
      if (gap < rules.minTimerSeconds) {
        problems.push({ path: path(name, ".cron"), message: `fires more often than the minimum interval of ${rules.minTimerSeconds} s` });
      }
    } catch (error) {
      problems.push({ path: path(name, ".cron"), message: `is not a valid cron expression: ${(error as Error).message}` });
      return undefined;
    }
    return timer;
  }
  if (typeof interval !== "number" || !Number.isSafeInteger(interval) || interval < 1) {
    problems.push({ path: path(name, ".intervalSeconds"), message: "must be a positive integer" });
    return undefined;
  }
  if (interval < rules.minTimerSeconds) {
    problems.push({ path: path(name, ".intervalSeconds"), message: `must be at least ${rules.minTimerSeconds}` });
  }
  return { intervalSeconds: interval };
}

function checkScalar(prop: NormalizedProp, base: string, value: unknown, where: string, problems: ErrorDetail[]): boolean {
  const fail = (message: string) => (problems.push({ path: where, message }), false);
  switch (base) {
    case "string":
      if (typeof value !== "string") return fail("must be a string");
      break;
    case "boolean":
      if (typeof value !== "boolean") return fail("must be a boolean");
      break;
    case "integer":
      if (typeof value !== "number" || !Number.isSafeInteger(value)) return fail("must be an integer");
      if (prop.min !== undefined && value < prop.min) return fail(`must be at least ${prop.min}`);
      if (prop.max !== undefined && value > prop.max) return fail(`must be at most ${prop.max}`);
      break;
    case "object":
      if (!isPlainObject(value)) return fail("must be an object");
      break;
    case "app":
      if (isAccountBinding(value)) {
        if (Object.keys(value).length !== 1 || !/^apn_[0-9a-z]{1,64}$/.test(value.authProvisionId))
          return fail('must be {"authProvisionId": "apn_…"} (a connected account) or {"$auth": {…}}');
        break;
      }
      if (!isPlainObject(value) || !isPlainObject(value.$auth))
        return fail('must be {"authProvisionId": "apn_…"} (a connected account) or {"$auth": {…}} (the app\'s credentials)');
      break;
    case "http_request": {
      const { problems: wrong } = readHttpRequest(value);
      if (wrong.length > 0) {
        for (const p of wrong) problems.push({ path: `${where}${p.path}`, message: p.message });
        return false;
      }
      break;
    }
    case "any":
      break;
    default:
      return fail(`props of type ${prop.type} cannot be configured`);
  }
  if (Array.isArray(prop.options) && prop.options.length > 0) {
    const allowed = prop.options.map(optionValue);
    if (!allowed.some((option) => JSON.stringify(option) === JSON.stringify(value))) {
      return fail(`must be one of ${JSON.stringify(allowed)}`);
    }
  }
  return true;
}

/** What a value check answers for a value it refused (its problem listed). */
const INVALID = Symbol("invalid");

/** A value given for a `withLabel` prop: `{ label, value }`, Pipedream's `{ __lv: { label, value } }`, or the value alone. */
function labelledValue(given: unknown): { readonly value: unknown; readonly label?: unknown } {
  const inner = isPlainObject(given) && Object.keys(given).length === 1 && isPlainObject(given.__lv) ? given.__lv : given;
  if (isPlainObject(inner) && "value" in inner && Object.keys(inner).every((k) => k === "label" || k === "value")) {
    return { value: inner.value, label: inner.label };
  }
  return { value: given };
}

/**
 * A `withLabel` prop's value as the component gets it, `{ label, value }`: the label given, else
 * the matching static option's, else the value as text; undefined (the problem listed) when the
 * value or the label is not valid.
 */
function checkLabelled(prop: NormalizedProp, base: string, given: unknown, where: string, problems: ErrorDetail[]) {
  const { value, label } = labelledValue(given);
  if (!checkScalar(prop, base, value, where, problems)) return undefined;
  if (label !== undefined && typeof label !== "string") {
    problems.push({ path: `${where}.label`, message: "must be a string" });
    return undefined;
  }
  const options: readonly PropOption[] = prop.options === undefined || prop.options === "dynamic" ? [] : prop.options;
  const option = options.find((o) => typeof o === "object" && JSON.stringify(o.value) === JSON.stringify(value));
  const optionLabel = typeof option === "object" ? option.label : undefined;
  return { label: label ?? optionLabel ?? (typeof value === "string" ? value : JSON.stringify(value)), value };
}

/**
 * Checks configured props against the component's props (types, arrays, integer bounds, static
 * options, required or optional, 64 KB per value), fills defaults, seals secrets, and lists every
 * problem with its path. `previous` (the stored props on update) supplies secrets sent back redacted.
 */
export function checkConfiguredProps(
  props: readonly NormalizedProp[],
  given: Record<string, unknown>,
  sealer: Sealer,
  rules: PropRules,
  previous: Record<string, unknown> = {},
): CheckedProps {
  const problems: ErrorDetail[] = [];
  const stored: Record<string, unknown> = {};
  const known = new Set(props.map((p) => p.name));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) problems.push({ path: path(name), message: "is not a prop of this component" });
  }
  for (const prop of props) {
    const raw = given[prop.name];
    if (prop.type === "$.service.db" || prop.type === "dir") {
      if (raw !== undefined) problems.push({ path: path(prop.name), message: `a ${prop.type} prop is not configurable` });
      continue;
    }
    if (prop.type === "$.interface.http") continue; // the endpoint is assigned, nothing to configure
    if (prop.type === "alert") continue; // a message for whoever configures the component, no value
    let value = raw;
    if ((value === undefined || value === null) && prop.default !== undefined) value = prop.default;
    // A request's default ({ method: "POST" }) fills what the configured request leaves out, as Pipedream's form starts from it.
    else if (prop.type === "http_request" && isPlainObject(value) && isPlainObject(prop.default)) value = { ...prop.default, ...value };
    const isApp = prop.type === "app" || prop.type === "app[]";
    // `{}` for an app prop says "no credentials" as plainly as leaving it out.
    if (isApp && isPlainObject(value) && Object.keys(value).length === 0) value = undefined;
    if (value === undefined || value === null) {
      // An app prop configured with nothing runs with `$auth: {}`, as Pipedream runs apps without credentials.
      if (!prop.optional && !isApp) problems.push({ path: path(prop.name), message: "is required" });
      continue;
    }
    if (jsonBytes(value) > MAX_PROP_BYTES) {
      problems.push({ path: path(prop.name), message: `is over ${MAX_PROP_BYTES} bytes` });
      continue;
    }
    if (prop.type === "$.interface.timer") {
      const timer = checkTimer(prop.name, value, rules, problems);
      if (timer) stored[prop.name] = timer;
      continue;
    }
    const isArray = prop.type.endsWith("[]");
    const base = isArray ? prop.type.slice(0, -2) : prop.type;
    const sealsValue = base === "app" || prop.secret;
    // The component gets { label, value } (not for object or app props, whose values are objects anyway).
    const labelled = prop.withLabel === true && base !== "object" && base !== "app";
    // A sealed value is kept when sent back redacted, or when it is the stored value itself (PUT without configured_props).
    const keepPrevious = (v: unknown, old: unknown) => sealsValue && isSealed(old) && (v === REDACTED || v === old);
    // An account binding is a reference, stored as given; inline credentials are sealed.
    const seal = (v: unknown) => (sealsValue && !(base === "app" && isAccountBinding(v)) ? sealer.seal(v) : v);
    // One value as stored (before sealing): as given, or `{ label, value }` for a labelled prop.
    const checkValue = (v: unknown, where: string): unknown =>
      labelled ? (checkLabelled(prop, base, v, where, problems) ?? INVALID) : checkScalar(prop, base, v, where, problems) ? v : INVALID;
    if (isArray) {
      if (!Array.isArray(value)) {
        problems.push({ path: path(prop.name), message: `must be an array of ${base}` });
        continue;
      }
      const old: unknown[] = Array.isArray(previous[prop.name]) ? (previous[prop.name] as unknown[]) : [];
      // Items in order, up to the first invalid one (its problem listed).
      const items: unknown[] = [];
      for (let i = 0; i < value.length && items.length === i; i++) {
        if (keepPrevious(value[i], old[i])) items.push(old[i]);
        else {
          const checked = checkValue(value[i], path(prop.name, `[${i}]`));
          if (checked !== INVALID) items.push(seal(checked));
        }
      }
      if (items.length === value.length) stored[prop.name] = items;
      continue;
    }
    if (keepPrevious(value, previous[prop.name])) {
      stored[prop.name] = previous[prop.name];
      continue;
    }
    if (base === "http_request" && isPlainObject(value)) {
      const { checkable, seal: sealAuth } = sealRequestAuth(value, previous[prop.name], sealer);
      if (checkScalar(prop, base, checkable, path(prop.name), problems)) stored[prop.name] = sealAuth(checkable);
      continue;
    }
    const checked = checkValue(value, path(prop.name));
    if (checked !== INVALID) stored[prop.name] = seal(checked);
  }
  return { stored, problems };
}

/** A timer value on its own (a workflow's timer trigger), its problems' paths under `where`. */
export function checkTimerValue(
  value: unknown,
  rules: PropRules,
  where: string,
): { timer: TimerValue | undefined; problems: ErrorDetail[] } {
  const problems: ErrorDetail[] = [];
  const timer = checkTimer("timer", value, rules, problems);
  const renamed = problems.map((p) => ({
    path: p.path.replace(/^configured_props\.timer(\.intervalSeconds)?/, where),
    message: p.message,
  }));
  return { timer, problems: renamed };
}

/** Configured values as user code sees them: sealed values opened. */
export function openProps(stored: Record<string, unknown>, sealer: Sealer): Record<string, unknown> {
  return Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, openValue(v, sealer)]));
}

/**
 * Configured values as user code sees them, connected accounts included: a bound account becomes
 * the prop's `{ $auth }`. Throws when a bound account is gone (the run then fails, naming it).
 */
export async function openPropsWithAccounts(
  stored: Record<string, unknown>,
  sealer: Sealer,
  sealedAuth: (accountId: string) => Promise<Sealed | undefined>,
): Promise<Record<string, unknown>> {
  const open = async (name: string, v: unknown): Promise<unknown> => {
    if (isAccountBinding(v)) {
      const auth = await sealedAuth(v.authProvisionId);
      if (!auth) throw new MissingAccountError(name, v.authProvisionId);
      return { $auth: sealer.open(auth) };
    }
    return Array.isArray(v) ? Promise.all(v.map((item) => open(name, item))) : openValue(v, sealer);
  };
  const entries = await Promise.all(Object.entries(stored).map(async ([k, v]) => [k, await open(k, v)] as const));
  return Object.fromEntries(entries);
}

export class MissingAccountError extends Error {
  override readonly name = "ConfigurationError";
  constructor(prop: string, accountId: string) {
    super(`configured_props.${prop} binds the connected account ${accountId}, which no longer exists: bind another account`);
  }
}

/** Seconds between a timer's fires (a cron's next two fires). */
export function timerIntervalSeconds(timer: TimerValue): number {
  if ("intervalSeconds" in timer) return timer.intervalSeconds;
  const runs = new Cron(timer.cron, cronOptions(timer)).nextRuns(2);
  return runs.length === 2 ? Math.round((runs[1].getTime() - runs[0].getTime()) / 1000) : 0;
}

/**
 * Configured props as the API answers them: secrets redacted, timers as {cron, interval_seconds, timezone},
 * the HTTP interface as {endpoint_url}.
 */
export function viewProps(props: readonly NormalizedProp[], stored: Record<string, unknown>, endpointUrl: string): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  const redact = (v: unknown): unknown =>
    isSealed(v) ? REDACTED : Array.isArray(v) ? v.map(redact) : isPlainObject(v) && isSealed(v.auth) ? { ...v, auth: REDACTED } : v;
  for (const prop of props) {
    if (prop.type === "$.interface.http") {
      view[prop.name] = { endpoint_url: endpointUrl };
      continue;
    }
    const value = stored[prop.name];
    if (value === undefined) continue;
    if (prop.type === "$.interface.timer") {
      const timer = value as TimerValue;
      view[prop.name] = {
        cron: "cron" in timer ? timer.cron : null,
        interval_seconds: timerIntervalSeconds(timer),
        timezone: "cron" in timer ? (timer.timezone ?? "UTC") : null,
      };
      continue;
    }
    view[prop.name] = redact(value);
  }
  return view;
}
