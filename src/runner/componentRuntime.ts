import type { Invocation, InvocationCallbacks, InvocationOutcome, PreparedComponent } from "../runtime/types.js";

/** A problem found when code is saved, with its path in the component (`props.count.min`). */
export interface ComponentProblem {
  readonly path: string;
  readonly message: string;
}

/** What the service needs from the sandbox: prepare code once, run it many times. */
export interface ComponentRuntime {
  /** Bundles and checks code; rejects with ComponentRejected listing every problem. */
  prepare(input: { code: string; url?: string }): Promise<PreparedComponent>;
  invoke(invocation: Invocation, callbacks?: InvocationCallbacks): Promise<InvocationOutcome>;
  close(): Promise<void>;
}

export class ComponentRejected extends Error {
  override readonly name = "ComponentRejected";
  constructor(readonly problems: readonly ComponentProblem[]) {
    super(problems.length === 1 ? problems[0]!.message : `${problems.length} problems in the component`);
  }
}
