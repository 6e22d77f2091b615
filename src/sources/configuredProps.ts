import { Cron } from "croner";
import type { NormalizedProp, PropOption } from "../runtime/types.js";
import type { ProblemDetail as ErrorDetail } from "../../commands/decider.js";
import { isSealed, type Sealer } from "../secrets/sealer.js";

/** The seed's limit on one configured prop value (its JSON text). */
export const MAX_PROP_BYTES = 64 * 1024;
/** What a secret looks like in API answers; sending it back on PUT keeps the stored value. */
export const REDACTED = "[redacted]";

export type TimerValue = { intervalSeconds: number } | { cron: string };

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

function checkTimer(name: string, value: unknown, rules: PropRules, problems: ErrorDetail[]): TimerValue | undefined {
  if (!isPlainObject(value)) {
    problems.push({ path: path(name), message: "must be an object with intervalSeconds (integer) or cron (string)" });
    return undefined;
  }
  const keys = Object.keys(value).filter((k) => value[k] !== undefined && value[k] !== null);
  const unknown = keys.filter((k) => k !== "intervalSeconds" && k !== "cron" && k !== "interval_seconds");
  if (unknown.length > 0) problems.push({ path: path(name), message: `unknown timer fields: ${unknown.join(", ")}` });
  const interval = value.intervalSeconds ?? value.interval_seconds;
  const cron = value.cron;
  if ((interval === undefined || interval === null) === (cron === undefined || cron === null)) {
    problems.push({ path: path(name), message: "give exactly one of intervalSeconds or cron" });
    return undefined;
  }
  if (cron !== undefined && cron !== null) {
    if (typeof cron !== "string") {
      problems.push({ path: path(name, ".cron"), message: "must be a string" });
      return undefined;
    }
    try {
      // The shortest of several gaps: the first one alone depends on when the request comes ("0,20 * * * * *" at second 5).
      const runs = new Cron(cron, { paused: true, timezone: "UTC" }).nextRuns(16);
      if (runs.length < 2) throw new Error("it never fires");
      const gap = Math.min(...runs.slice(1).map((run, i) => (run.getTime() - runs[i].getTime()) / 1000));
      if (gap < rules.minTimerSeconds) {
        problems.push({ path: path(name, ".cron"), message: `fires more often than the minimum interval of ${rules.minTimerSeconds} s` });
      }
    } catch (error) {
      problems.push({ path: path(name, ".cron"), message: `is not a valid cron expression: ${(error as Error).message}` });
      return undefined;
    }
    return { cron };
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
      if (!isPlainObject(value) || !isPlainObject(value.$auth)) return fail("must be an object with $auth (the app's credentials)");
      break;
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
    if (prop.type === "$.service.db") {
      if (raw !== undefined) problems.push({ path: path(prop.name), message: "a $.service.db prop is not configurable" });
      continue;
    }
    if (prop.type === "$.interface.http") continue; // the endpoint is assigned, nothing to configure
    let value = raw;
    if ((value === undefined || value === null) && prop.default !== undefined) value = prop.default;
    if (value === undefined || value === null) {
      if (!prop.optional) problems.push({ path: path(prop.name), message: "is required" });
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
    // A sealed value is kept when sent back redacted, or when it is the stored value itself (PUT without configured_props).
    const keepPrevious = (v: unknown, old: unknown) => sealsValue && isSealed(old) && (v === REDACTED || v === old);
    if (isArray) {
      if (!Array.isArray(value)) {
        problems.push({ path: path(prop.name), message: `must be an array of ${base}` });
        continue;
      }
      const old: unknown[] = Array.isArray(previous[prop.name]) ? (previous[prop.name] as unknown[]) : [];
      const ok = value.every((item, i) => keepPrevious(item, old[i]) || checkScalar(prop, base, item, path(prop.name, `[${i}]`), problems));
      if (ok)
        stored[prop.name] = value.map((item: unknown, i): unknown =>
          keepPrevious(item, old[i]) ? old[i] : sealsValue ? sealer.seal(item) : item,
        );
      continue;
    }
    if (keepPrevious(value, previous[prop.name])) {
      stored[prop.name] = previous[prop.name];
      continue;
    }
    if (checkScalar(prop, base, value, path(prop.name), problems)) stored[prop.name] = sealsValue ? sealer.seal(value) : value;
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
  const open = (v: unknown): unknown => (isSealed(v) ? sealer.open(v) : Array.isArray(v) ? v.map(open) : v);
  return Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, open(v)]));
}

/** Seconds between a timer's fires (a cron's next two fires). */
export function timerIntervalSeconds(timer: TimerValue): number {
  if ("intervalSeconds" in timer) return timer.intervalSeconds;
  const runs = new Cron(timer.cron, { paused: true, timezone: "UTC" }).nextRuns(2);
  return runs.length === 2 ? Math.round((runs[1].getTime() - runs[0].getTime()) / 1000) : 0;
}

/**
 * Configured props as the API answers them: secrets redacted, timers as {cron, interval_seconds},
 * the HTTP interface as {endpoint_url}.
 */
export function viewProps(props: readonly NormalizedProp[], stored: Record<string, unknown>, endpointUrl: string): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  const redact = (v: unknown): unknown => (isSealed(v) ? REDACTED : Array.isArray(v) ? v.map(redact) : v);
  for (const prop of props) {
    if (prop.type === "$.interface.http") {
      view[prop.name] = { endpoint_url: endpointUrl };
      continue;
    }
    const value = stored[prop.name];
    if (value === undefined) continue;
    if (prop.type === "$.interface.timer") {
      const timer = value as TimerValue;
      view[prop.name] = { cron: "cron" in timer ? timer.cron : null, interval_seconds: timerIntervalSeconds(timer) };
      continue;
    }
    view[prop.name] = redact(value);
  }
  return view;
}
