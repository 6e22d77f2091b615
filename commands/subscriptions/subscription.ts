import { createHash } from "node:crypto";
import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

// A subscription routes an emitter's events on one channel to one listener. Its id is derived from
// (owner, emitter, listener, channel), so creating the same triple twice lands on the same stream
// and is a no-op, and DELETE by triple finds it without a lookup.

/** Channels: "" is the default channel; "$errors" and "$logs" are built in; anything else is a named channel. */
export const ERRORS_CHANNEL = "$errors";
export const LOGS_CHANNEL = "$logs";
/** Globs: every source, or every workflow, of the subscription's owner (those created later too). */
export const EMITTER_GLOBS = ["dc_*", "p_*"] as const;

export type ListenerKind = "source" | "workflow" | "webhook";
export type EmitterKind = "source" | "workflow";

export function listenerKindOf(id: string): ListenerKind | undefined {
  if (/^dc_[0-9a-z]+$/.test(id)) return "source";
  if (/^p_[0-9a-z]+$/.test(id)) return "workflow";
  if (/^wh_[0-9a-z]+$/.test(id)) return "webhook";
  return undefined;
}

export function emitterKindOf(id: string): EmitterKind | undefined {
  if (id === "dc_*" || /^dc_[0-9a-z]+$/.test(id)) return "source";
  if (id === "p_*" || /^p_[0-9a-z]+$/.test(id)) return "workflow";
  return undefined;
}

export const isGlob = (emitterId: string) => (EMITTER_GLOBS as readonly string[]).includes(emitterId);

export function subscriptionId(ownerId: string, emitterId: string, listenerId: string, eventName: string): string {
  const digest = createHash("sha256")
    .update(JSON.stringify([ownerId, emitterId, listenerId, eventName]))
    .digest("hex");
  return `sub_${BigInt(`0x${digest.slice(0, 20)}`)
    .toString(36)
    .padStart(16, "0")
    .slice(0, 16)}`;
}

export interface SubscriptionData {
  id: string;
  ownerId: string;
  emitterId: string;
  listenerId: string;
  eventName: string;
  /** Set when an auto-subscription made it (for the emitter it was created for). */
  autoSubscriptionId?: string;
}

export type SubscriptionCreated = DomainEvent<"SubscriptionCreated", SubscriptionData & { by: string; at: number }>;
export type SubscriptionDeleted = DomainEvent<"SubscriptionDeleted", { id: string; ownerId: string; at: number }>;
export type SubscriptionEvent = SubscriptionCreated | SubscriptionDeleted;

export type SubscriptionState = { status: "none" | "deleted" } | { status: "active"; data: SubscriptionData };

/**
 * The facts the application gathered: whether the caller can see the emitter and the listener
 * (a glob is always the caller's own), and whether the read models already list this subscription
 * (one an auto-subscription made, which has no stream of its own).
 */
export type CreateSubscription = Command<
  "CreateSubscription",
  SubscriptionData & { by: string; at: number; emitterVisible: boolean; listenerVisible: boolean }
>;
export type DeleteSubscription = Command<
  "DeleteSubscription",
  {
    id: string;
    ownerId: string;
    at: number;
    listed: boolean;
    /** Its emitter (not a glob) or its listener no longer exists: the subscription ended with it. */
    ended: boolean;
  }
>;
export type SubscriptionCommand = CreateSubscription | DeleteSubscription;

/** A channel name as $emit takes it: any string; bounded, without control characters. */
function checkChannel(eventName: string): void {
  if (eventName.length > 200 || /[\u0000-\u001f]/.test(eventName)) {
    throw new DomainError("invalid_request", "event_name must be at most 200 characters, without control characters", [
      { path: "query.event_name", message: "is not a channel name" },
    ]);
  }
}

export const subscription: Decider<SubscriptionCommand, SubscriptionState, SubscriptionEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(_state, event) {
    switch (event.type) {
      case "SubscriptionCreated": {
        const { by: _by, at: _at, ...data } = event.data;
        return { status: "active", data };
      }
      case "SubscriptionDeleted":
        return { status: "deleted" };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case "CreateSubscription": {
        const { emitterVisible, listenerVisible, ...data } = command.data;
        const emitterKind = emitterKindOf(data.emitterId);
        if (!emitterKind) {
          throw new DomainError("invalid_request", "emitter_id must be a source (dc_…), a workflow (p_…) or a glob (dc_*, p_*)", [
            { path: "query.emitter_id", message: "is not an emitter" },
          ]);
        }
        if (!listenerKindOf(data.listenerId)) {
          throw new DomainError("invalid_request", "listener_id must be a source (dc_…), a workflow (p_…) or a webhook (wh_…)", [
            { path: "query.listener_id", message: "is not a listener" },
          ]);
        }
        // Other users' resources answer like unknown ones.
        if (!emitterVisible) throw notFound("emitter");
        if (!listenerVisible) throw notFound("listener");
        if (data.emitterId === data.listenerId) {
          throw new DomainError("invalid_request", "a source cannot listen to itself", [
            { path: "query.listener_id", message: "is the emitter" },
          ]);
        }
        checkChannel(data.eventName);
        if (state.status === "active") return [];
        return [{ type: "SubscriptionCreated", data }];
      }
      case "DeleteSubscription": {
        if ((state.status !== "active" && !command.data.listed) || command.data.ended) throw notFound("subscription");
        return [{ type: "SubscriptionDeleted", data: { id: command.data.id, ownerId: command.data.ownerId, at: command.data.at } }];
      }
    }
  },
};

/** POST /auto_subscriptions: the owner's sources and workflows created afterwards get this subscription. */
export type AutoSubscriptionCreated = DomainEvent<
  "AutoSubscriptionCreated",
  { id: string; ownerId: string; eventName: string; listenerId: string; by: string; at: number }
>;
export type AutoSubscriptionDeleted = DomainEvent<"AutoSubscriptionDeleted", { id: string; ownerId: string; at: number }>;
export type AutoSubscriptionEvent = AutoSubscriptionCreated | AutoSubscriptionDeleted;
export type AutoSubscriptionState = { status: "none" | "deleted" } | { status: "active" };

export type CreateAutoSubscription = Command<"CreateAutoSubscription", AutoSubscriptionCreated["data"] & { listenerVisible: boolean }>;
export type DeleteAutoSubscription = Command<"DeleteAutoSubscription", { id: string; ownerId: string; at: number }>;
export type AutoSubscriptionCommand = CreateAutoSubscription | DeleteAutoSubscription;

/** The same (owner, channel, listener) twice is one auto-subscription. */
export const autoSubscriptionId = (ownerId: string, eventName: string, listenerId: string) =>
  subscriptionId(ownerId, "auto", listenerId, eventName).replace(/^sub_/, "asub_");

export const autoSubscription: Decider<AutoSubscriptionCommand, AutoSubscriptionState, AutoSubscriptionEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(_state, event) {
    return { status: event.type === "AutoSubscriptionCreated" ? "active" : "deleted" };
  },
  decide(command, state) {
    switch (command.type) {
      case "CreateAutoSubscription": {
        const { listenerVisible, ...data } = command.data;
        if (data.eventName !== ERRORS_CHANNEL && data.eventName !== LOGS_CHANNEL) {
          throw new DomainError("invalid_request", "event_name of an auto-subscription must be $errors or $logs", [
            { path: "query.event_name", message: "must be $errors or $logs" },
          ]);
        }
        if (!listenerKindOf(data.listenerId)) {
          throw new DomainError("invalid_request", "listener_id must be a source (dc_…), a workflow (p_…) or a webhook (wh_…)", [
            { path: "query.listener_id", message: "is not a listener" },
          ]);
        }
        if (!listenerVisible) throw notFound("listener");
        if (state.status === "active") return [];
        return [{ type: "AutoSubscriptionCreated", data }];
      }
      case "DeleteAutoSubscription":
        if (state.status !== "active") throw notFound("auto-subscription");
        return [{ type: "AutoSubscriptionDeleted", data: { ...command.data } }];
    }
  },
};
