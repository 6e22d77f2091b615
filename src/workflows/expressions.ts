// Step props may refer to what earlier steps produced: `{{steps.trigger.event.body.name}}`. A prop
// that is exactly one expression takes the referenced value as it is (an object stays an object);
// expressions inside a longer string are replaced by their text. Only paths into `steps` are
// allowed (property names and indexes), evaluated on the trusted side without any code: nothing a
// user writes in a definition runs outside the sandbox.
import { DomainError, type ProblemDetail } from "../../commands/decider.js";

const EXPRESSION = /\{\{\s*([^{}]*?)\s*\}\}/g;
const WHOLE = /^\{\{\s*([^{}]*?)\s*\}\}$/;
const SEGMENT = /^(?:\.([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d{1,9})\]|\["((?:[^"\\]|\\.)*)"\]|\['((?:[^'\\]|\\.)*)'\])/;

/** The property names of a path expression, or a reason it is not one. */
export function parsePath(expression: string): { segments: (string | number)[] } | { error: string } {
  const root = /^steps\b/.exec(expression);
  if (!root) return { error: "must start with steps (e.g. {{steps.trigger.event.body}})" };
  const segments: (string | number)[] = [];
  let rest = expression.slice("steps".length);
  while (rest.length > 0) {
    const match = SEGMENT.exec(rest);
    if (!match) return { error: `cannot read "${rest.slice(0, 40)}": only .name, [index] and ["name"] are allowed` };
    if (match[1] !== undefined) segments.push(match[1]);
    else if (match[2] !== undefined) segments.push(Number(match[2]));
    else segments.push((match[3] ?? match[4]).replace(/\\(.)/g, "$1"));
    rest = rest.slice(match[0].length);
  }
  return { segments };
}

/** Every expression problem of a prop value (deploy time), with its path. */
export function expressionProblems(value: unknown, path: string): ProblemDetail[] {
  const problems: ProblemDetail[] = [];
  walkStrings(value, path, (text, where) => {
    for (const match of text.matchAll(EXPRESSION)) {
      const parsed = parsePath(match[1]);
      if ("error" in parsed) problems.push({ path: where, message: `{{${match[1]}}} ${parsed.error}` });
    }
  });
  return problems;
}

export const hasExpression = (value: unknown): boolean => {
  let found = false;
  walkStrings(value, "", (text) => {
    if (/\{\{[^{}]*\}\}/.test(text)) found = true;
  });
  return found;
};

/** The value with its expressions evaluated against the run's `steps`. */
export function evaluate(value: unknown, steps: Record<string, unknown>): unknown {
  if (typeof value === "string") {
    const whole = WHOLE.exec(value);
    if (whole) return lookup(whole[1], steps);
    if (!value.includes("{{")) return value;
    return value.replace(EXPRESSION, (_all, expression: string) => text(lookup(expression, steps)));
  }
  if (Array.isArray(value)) return value.map((item) => evaluate(item, steps));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, evaluate(item, steps)]));
  }
  return value;
}

function lookup(expression: string, steps: Record<string, unknown>): unknown {
  const parsed = parsePath(expression);
  if ("error" in parsed) throw new DomainError("invalid_request", `{{${expression}}} ${parsed.error}`);
  let current: unknown = steps;
  for (const segment of parsed.segments) {
    if (current === null || typeof current !== "object") return undefined;
    // Own properties only: no prototype walking (`constructor`, `__proto__`).
    if (!Object.prototype.hasOwnProperty.call(current, segment)) return undefined;
    current = (current as Record<string | number, unknown>)[segment];
  }
  return current;
}

const text = (value: unknown): string =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : (JSON.stringify(value) ?? "");

function walkStrings(value: unknown, path: string, visit: (text: string, path: string) => void): void {
  if (typeof value === "string") visit(value, path);
  else if (Array.isArray(value)) value.forEach((item, i) => walkStrings(item, `${path}[${i}]`, visit));
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) walkStrings(item, path === "" ? key : `${path}.${key}`, visit);
  }
}
