// Every error code Headwater answers with, API and CLI alike. The API's one table maps each to an
// HTTP status (src/api/errors.ts); the CLI prints {"error", "code"} and exits with a status per kind.

export const ERROR_CODES = [
  // the request or command is wrong
  "invalid_request",
  "malformed_json",
  "json_too_deep",
  "malformed_body",
  "invalid_component",
  "invalid_api_key",
  "invalid_name",
  "hook_failed",
  "component_url_unreachable",
  "usage",
  "invalid_config",
  // who is asking
  "unauthorized",
  "forbidden",
  // what it names
  "not_found",
  "method_not_allowed",
  "not_implemented",
  // what it conflicts with
  "name_taken",
  "already_exists",
  "account_in_use",
  "data_dir_locked",
  // how much
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "quota_exceeded",
  "backlog_full",
  "overloaded",
  // what happened to a run
  "run_failed",
  "run_timeout",
  // ours
  "unavailable",
  "internal",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];
