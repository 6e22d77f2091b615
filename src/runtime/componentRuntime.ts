import { prepareComponent, ComponentValidationError, Runtime, type RuntimeOptions } from "./index.js";
import type { RuntimeEvents } from "./sandbox/runtime.js";
import type { PrepareInput } from "./component/prepare.js";
import type { Invocation, InvocationCallbacks, InvocationOutcome, PreparedComponent } from "./types.js";

/** Component code as users give it: one module (maybe from a URL), or uploaded files and their entry. */
export type ComponentSource = Pick<PrepareInput, "code" | "url" | "files" | "entry">;

/** What the service needs from the sandbox: prepare code once, run it many times. */
export interface ComponentRuntime {
  /** Bundles and checks code; rejects with ComponentValidationError listing every problem. */
  prepare(input: ComponentSource): Promise<PreparedComponent>;
  invoke(invocation: Invocation, callbacks?: InvocationCallbacks): Promise<InvocationOutcome>;
  /**
   * Runs invocations of one source in order, entering the sandbox once; each run's db is the one
   * the previous run left, and each has its own outcome, timeout and limits.
   */
  invokeBatch(invocations: readonly Invocation[]): Promise<InvocationOutcome[]>;
  /** Runs so far whose source's sandbox context was warm, and those that had to make it (cold starts). */
  starts(): { readonly warm: number; readonly cold: number };
  close(): Promise<void>;
}

/** The isolated-vm runtime (supervised child processes) behind the port. */
export class IsolatedRuntime implements ComponentRuntime {
  readonly #runtime: Runtime;

  constructor(
    private readonly options: RuntimeOptions & { npmRegistry?: string },
    events: RuntimeEvents = {},
  ) {
    this.#runtime = new Runtime(options, events);
  }

  async prepare(input: ComponentSource): Promise<PreparedComponent> {
    const opts = { runtime: this.#runtime, ...(this.options.npmRegistry ? { npmRegistry: this.options.npmRegistry } : {}) };
    const name = input.entry ?? input.url;
    const typescript = name !== undefined && /\.[cm]?ts(\?|#|$)/.test(name);
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

  invokeBatch(invocations: readonly Invocation[]): Promise<InvocationOutcome[]> {
    return this.#runtime.invokeBatch(invocations);
  }

  starts(): { readonly warm: number; readonly cold: number } {
    return { ...this.#runtime.starts };
  }

  close(): Promise<void> {
    return this.#runtime.close();
  }
}

const isSyntaxProblem = (p: { message: string }) => /expected|unexpected|syntax|unterminated/i.test(p.message);
