import type { DomainEvent } from "../decider.js";

// One node routes emitted events to subscriptions at a time: it holds a lease in the `router`
// stream and records there how far it routed. Another node takes over once the lease runs out,
// from the recorded position (routing is idempotent by delivery id, so what was routed after the
// last checkpoint only goes out twice, with the same ids).

export type RouterCheckpointed = DomainEvent<"RouterCheckpointed", { node: string; position: number; leaseUntil: number; at: number }>;

export interface RouterState {
  readonly node: string | undefined;
  /** Every event up to here was routed. */
  readonly position: number;
  readonly leaseUntil: number;
}

export const initialRouter: RouterState = { node: undefined, position: 0, leaseUntil: 0 };

export const evolveRouter = (_state: RouterState, event: RouterCheckpointed): RouterState => ({
  node: event.data.node,
  position: event.data.position,
  leaseUntil: event.data.leaseUntil,
});

/**
 * A node takes the lease when it is free (ran out) or its own, and records its position (never
 * going back); nothing when another node holds it.
 */
export function checkpoint(
  state: RouterState,
  command: { node: string; position: number; now: number; leaseMs: number },
): RouterCheckpointed[] {
  if (state.node !== undefined && state.node !== command.node && state.leaseUntil > command.now) return [];
  const position = Math.max(state.node === command.node ? command.position : state.position, state.position);
  return [
    { type: "RouterCheckpointed", data: { node: command.node, position, leaseUntil: command.now + command.leaseMs, at: command.now } },
  ];
}
