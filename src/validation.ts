import { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { TSchema } from "@sinclair/typebox";
import { DomainError, type ProblemDetail } from "../commands/decider.js";

export type Schema = TSchema | Record<string, unknown>;
type ErrorDetail = ProblemDetail;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

// Request and document validation (the API's routes, workflow definitions): every problem with its path.
// Query strings arrive as text, so their validator coerces "5" to 5; bodies are JSON and are not coerced.
const queryAjv = addFormats(new Ajv2020({ allErrors: true, coerceTypes: true, useDefaults: true, strict: true }));
const bodyAjv = addFormats(new Ajv2020({ allErrors: true, useDefaults: true, strict: true }));

/** The pattern of a name that must not be blank: some character other than white space. */
export const NOT_BLANK = "\\S";

export interface Validator<T> {
  (value: unknown): T;
}

function describe(error: ErrorObject, where: string): ErrorDetail {
  // "/steps/0/name" reads "steps[0].name".
  const base = error.instancePath
    .replace(/^\//, "")
    .split("/")
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === "" ? part : `${path}.${part}`), "");
  const name =
    error.keyword === "required"
      ? (error.params as { missingProperty: string }).missingProperty
      : error.keyword === "additionalProperties"
        ? (error.params as { additionalProperty: string }).additionalProperty
        : undefined;
  const path = [where, base, name].filter((part) => part !== undefined && part !== "").join(".");
  const message =
    error.keyword === "additionalProperties"
      ? "is not a known parameter"
      : error.keyword === "required"
        ? "is required"
        : error.keyword === "pattern" && (error.params as { pattern?: string }).pattern === NOT_BLANK
          ? "must not be blank"
          : (error.message ?? "is invalid");
  return { path, message };
}

const isUnion = (e: ErrorObject) => e.keyword === "anyOf" || e.keyword === "oneOf";

/**
 * Ajv's errors of a union list every branch's complaint ("must be equal to constant" three times,
 * "must be string", "must match a schema in anyOf"). Kept: the branches that got furthest into the
 * value (the object branch for an object with a bad field), the union's own summary only when
 * nothing else is said, and a path's allowed constants as one "must be one of" naming them.
 */
function simplify(errors: readonly ErrorObject[]): ErrorObject[] {
  let list = [...errors];
  for (const union of errors.filter(isUnion)) {
    const prefix = `${union.schemaPath}/`;
    const branchOf = (e: ErrorObject) => (e.schemaPath.startsWith(prefix) ? e.schemaPath.slice(prefix.length).split("/")[0] : undefined);
    const reach = new Map<string, number>();
    for (const e of list) {
      const branch = branchOf(e);
      if (branch !== undefined) reach.set(branch, Math.max(reach.get(branch) ?? -1, e.instancePath.length));
    }
    const furthest = Math.max(...reach.values());
    list = list.filter((e) => {
      const branch = branchOf(e);
      return branch === undefined || reach.get(branch) === furthest;
    });
  }
  if (list.some((e) => !isUnion(e))) list = list.filter((e) => !isUnion(e));
  const out: ErrorObject[] = [];
  const allowed = new Map<string, { error: ErrorObject; values: unknown[] }>();
  for (const e of list) {
    const values =
      e.keyword === "const"
        ? [(e.params as { allowedValue: unknown }).allowedValue]
        : e.keyword === "enum"
          ? (e.params as { allowedValues: unknown[] }).allowedValues
          : undefined;
    if (values === undefined) {
      out.push(e);
      continue;
    }
    const seen = allowed.get(e.instancePath);
    if (seen) seen.values.push(...values);
    else {
      const entry = { error: { ...e }, values: [...values] };
      allowed.set(e.instancePath, entry);
      out.push(entry.error);
    }
  }
  for (const { error, values } of allowed.values()) {
    const named = [...new Set(values.map((v) => JSON.stringify(v)))];
    error.message = named.length === 1 ? `must be ${named[0]}` : `must be one of ${named.join(", ")}`;
  }
  const said = new Set<string>();
  return out.filter((e) => {
    const key = `${e.instancePath}\u0000${e.keyword}\u0000${e.message}\u0000${JSON.stringify(e.params)}`;
    if (said.has(key)) return false;
    said.add(key);
    return true;
  });
}

/** Decimal integers as query text: no exponents, hex, fractions or Infinity, and within the safe range. */
const INTEGER_TEXT = /^-?(?:0|[1-9][0-9]{0,15})$/;

function integerTextProblems(schema: Schema, value: unknown, where: string): ErrorDetail[] {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  if (value === null || typeof value !== "object") return [];
  const problems: ErrorDetail[] = [];
  for (const [name, text] of Object.entries(value as Record<string, unknown>)) {
    if (properties[name]?.type !== "integer" || typeof text !== "string") continue;
    if (!INTEGER_TEXT.test(text) || !Number.isSafeInteger(Number(text)))
      problems.push({ path: `${where}.${name}`, message: "must be an integer" });
  }
  return problems;
}

/** `?limit=1&limit=2` arrives as an array: no query parameter takes several values, so say that plainly. */
function repeatedProblems(value: unknown, where: string): ErrorDetail[] {
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => Array.isArray(v))
    .map(([name]) => ({ path: `${where}.${name}`, message: "is given more than once" }));
}

function compile<T>(ajv: Ajv2020, schema: Schema, where: string): Validator<T> {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value: unknown): T => {
    // Coercion would read "Infinity", "1e400" or "0x10" as numbers; text parameters must be plain decimals.
    const repeated = where === "query" ? repeatedProblems(value, where) : [];
    const textProblems =
      repeated.length > 0 ? repeated : where !== "query" && where !== "params" ? [] : integerTextProblems(schema, value, where);
    if (textProblems.length === 0 && validate(value)) return value as T;
    const details = textProblems.length > 0 ? textProblems : simplify(validate.errors ?? []).map((e) => describe(e, where));
    const first = details[0];
    throw new DomainError("invalid_request", first ? `${first.path} ${first.message}` : `invalid ${where}`, details);
  };
}

export const queryValidator = <T>(schema: Schema) => compile<T>(queryAjv, schema, "query");
export const bodyValidator = <T>(schema: Schema) => compile<T>(bodyAjv, schema, "body");
export const paramsValidator = <T>(schema: Schema) => compile<T>(queryAjv, schema, "params");
/** A JSON document validated as is (no coercion); problem paths start with `where` (e.g. "definition"). */
export const schemaValidator = <T>(schema: Schema, where: string) => compile<T>(bodyAjv, schema, where);
