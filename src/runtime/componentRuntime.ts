import { prepareComponent, ComponentValidationError, Runtime, type RuntimeOptions } from "./index.js";
import type { Invocation, InvocationCallbacks, InvocationOutcome, PreparedComponent } from "./types.js";

/** What the service needs from the sandbox: prepare code once, run it many times. */
export interface ComponentRuntime {
  /** Bundles and checks code; rejects with ComponentValidationError listing every problem. */
  prepare(input: { code: string; url?: string }): Promise<PreparedComponent>;
  invoke(invocation: Invocation, callbacks?: InvocationCallbacks): Promise<InvocationOutcome>;
  close(): Promise<void>;
}

/** The isolated-vm runtime (supervised child processes) behind the port. */
export class IsolatedRuntime implements ComponentRuntime {
  readonly #runtime: Runtime;

  constructor(private readonly options: RuntimeOptions & { npmRegistry?: string }) {
    this.#runtime = new Runtime(options);
  }

  async prepare(input: { code: string; url?: string }): Promise<PreparedComponent> {
    const opts = { runtime: this.#runtime, ...(this.options.npmRegistry ? { npmRegistry: this.options.npmRegistry } : {}) };
    const typescript = input.url !== undefined && /\.[cm]?ts(\?|#|$)/.test(input.url);
    try {
      return await prepareComponent({ ...input, typescript }, opts);
    } catch (error) {
      // Components written in TypeScript usually arrive without a file name: a JavaScript syntax
      // error is then worth one more try as TypeScript.
      if (typescript || !(error instanceof ComponentValidationError) || !error.problems.some(isSyntaxProblem)) throw error;
      try {
        return await prepareComponent({ ...input, typescript: true }, opts);
      } catch {
        throw error;
      }
    }
  }

  invoke(invocation: Invocation, callbacks?: InvocationCallbacks): Promise<InvocationOutcome> {
    return this.#runtime.invoke(invocation, callbacks);
  }

  close(): Promise<void> {
    return this.#runtime.close();
  }
}

const isSyntaxProblem = (p: { message: string }) => /expected|unexpected|syntax|unterminated/i.test(p.message);
