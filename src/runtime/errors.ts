// Typed errors of the runtime library.

export interface Problem {
  /** Where in the component: "name", "props.channel.type", "props.channel.options[2]", "(module)". */
  readonly path: string;
  readonly message: string;
}

/** Saving code failed: every problem found, each with its path (the API answers 400 with them). */
export class ComponentValidationError extends Error {
  override readonly name = "ComponentValidationError";
  constructor(readonly problems: readonly Problem[]) {
    super(`invalid component: ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`);
  }
}
