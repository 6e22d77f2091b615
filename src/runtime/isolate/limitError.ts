// Errors the platform throws into user code when a limit is reached. Uncaught, they fail the run
// with code LIMIT_EXCEEDED. The private brand cannot be forged or hidden by prototype tampering,
// and the check is a module binding, not a property the component could replace.

export let isLimitError: (value: unknown) => boolean;

export class LimitError extends Error {
  readonly #limit = true;
  static {
    isLimitError = (value) => ((typeof value === "object" && value !== null) || typeof value === "function") && #limit in value;
  }
}
