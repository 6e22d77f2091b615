import { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { ApiError, type ErrorDetail } from "./errors.js";

export type Schema = Record<string, unknown>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

// Query strings arrive as text, so their validator coerces "5" to 5; bodies are JSON and are not coerced.
const queryAjv = addFormats(new Ajv2020({ allErrors: true, coerceTypes: true, useDefaults: true, strict: true }));
const bodyAjv = addFormats(new Ajv2020({ allErrors: true, useDefaults: true, strict: true }));

export interface Validator<T> {
  (value: unknown): T;
}

function describe(error: ErrorObject, where: string): ErrorDetail {
  const base = error.instancePath.replace(/^\//, "").replace(/\//g, ".");
  const name =
    error.keyword === "required" ? (error.params as { missingProperty: string }).missingProperty
    : error.keyword === "additionalProperties" ? (error.params as { additionalProperty: string }).additionalProperty
    : undefined;
  const path = [where, base, name].filter((part) => part !== undefined && part !== "").join(".");
  const message =
    error.keyword === "additionalProperties" ? "is not a known parameter"
    : error.keyword === "required" ? "is required"
    : error.message ?? "is invalid";
  return { path, message };
}

function compile<T>(ajv: Ajv2020, schema: Schema, where: "query" | "body" | "params"): Validator<T> {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value: unknown): T => {
    if (validate(value)) return value as T;
    const details = (validate.errors ?? []).map((e) => describe(e, where));
    const first = details[0];
    throw new ApiError(400, "invalid_request", first ? `${first.path} ${first.message}` : `invalid ${where}`, details);
  };
}

export const queryValidator = <T>(schema: Schema) => compile<T>(queryAjv, schema, "query");
export const bodyValidator = <T>(schema: Schema) => compile<T>(bodyAjv, schema, "body");
export const paramsValidator = <T>(schema: Schema) => compile<T>(queryAjv, schema, "params");
