import { DomainError, notFound, type Command, type Decider, type DomainEvent } from "../decider.js";

/** A secret as stored: sealed by the application (commands never see it in clear). */
export type SealedSecret = Readonly<Record<string, unknown>>;

export interface WebhookFields {
  url: string;
  name: string | null;
  description: string | null;
}

export type WebhookCreated = DomainEvent<
  "WebhookCreated",
  WebhookFields & { id: string; ownerId: string; creatorId: string; secret: SealedSecret; at: number }
>;
export type WebhookUpdated = DomainEvent<"WebhookUpdated", WebhookFields & { id: string; at: number }>;
export type WebhookPaused = DomainEvent<"WebhookPaused", { id: string; at: number }>;
export type WebhookResumed = DomainEvent<"WebhookResumed", { id: string; at: number }>;
/** Deliveries kept failing: the node stopped sending, and says why. */
export type WebhookDisabled = DomainEvent<"WebhookDisabled", { id: string; reason: string; at: number }>;
/** The previous secret still signs (beside the new one) until previousValidUntil, so receivers can switch. */
export type WebhookSecretRotated = DomainEvent<
  "WebhookSecretRotated",
  { id: string; secret: SealedSecret; previous: SealedSecret; previousValidUntil: number; at: number }
>;
export type WebhookDeleted = DomainEvent<"WebhookDeleted", { id: string; ownerId: string; at: number }>;
export type WebhookEvent =
  WebhookCreated | WebhookUpdated | WebhookPaused | WebhookResumed | WebhookDisabled | WebhookSecretRotated | WebhookDeleted;

export type LiveWebhook = WebhookFields & {
  status: "active" | "paused" | "disabled";
  id: string;
  ownerId: string;
  secret: SealedSecret;
  previous?: { secret: SealedSecret; validUntil: number };
  disabledReason?: string;
};
export type WebhookState = { status: "none" } | { status: "deleted" } | LiveWebhook;

const isLive = (state: WebhookState): state is LiveWebhook => state.status !== "none" && state.status !== "deleted";

export type CreateWebhook = Command<"CreateWebhook", WebhookCreated["data"]>;
export type UpdateWebhook = Command<"UpdateWebhook", Partial<WebhookFields> & { id: string; at: number }>;
export type PauseWebhook = Command<"PauseWebhook", { id: string; at: number }>;
export type ResumeWebhook = Command<"ResumeWebhook", { id: string; at: number }>;
export type DisableWebhook = Command<"DisableWebhook", { id: string; reason: string; at: number }>;
export type RotateWebhookSecret = Command<
  "RotateWebhookSecret",
  { id: string; secret: SealedSecret; previousValidUntil: number; at: number }
>;
export type DeleteWebhook = Command<"DeleteWebhook", { id: string; at: number }>;
export type WebhookCommand =
  CreateWebhook | UpdateWebhook | PauseWebhook | ResumeWebhook | DisableWebhook | RotateWebhookSecret | DeleteWebhook;

/** The seed: http or https with a hostname; a port, a path and a query are allowed. */
export function checkWebhookUrl(url: string): void {
  const refuse = (why: string) => {
    throw new DomainError("invalid_request", `url ${why}`, [{ path: "url", message: why }]);
  };
  if (url.length > 2048) refuse("must be at most 2048 characters");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse("is not a URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    refuse(`must use http or https, not ${parsed.protocol.replace(/:$/, "")}`);
  if (parsed.hostname === "") refuse("needs a hostname");
}

function checkText(field: "name" | "description", value: string | null | undefined, max: number): void {
  if (value !== null && value !== undefined && (value.length > max || /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(value))) {
    throw new DomainError("invalid_request", `${field} must be at most ${max} characters, without control characters`, [
      { path: field, message: `is not a valid ${field}` },
    ]);
  }
}

export const webhook: Decider<WebhookCommand, WebhookState, WebhookEvent> = {
  initialState: () => ({ status: "none" }),
  evolve(state, event) {
    if (event.type === "WebhookCreated") {
      const { id, ownerId, url, name, description, secret } = event.data;
      return { status: "active", id, ownerId, url, name, description, secret };
    }
    if (event.type === "WebhookDeleted") return { status: "deleted" };
    if (!isLive(state)) return state;
    switch (event.type) {
      case "WebhookUpdated":
        return { ...state, url: event.data.url, name: event.data.name, description: event.data.description };
      case "WebhookPaused":
        return { ...state, status: "paused" };
      case "WebhookResumed": {
        const { disabledReason: _reason, ...rest } = state;
        return { ...rest, status: "active" };
      }
      case "WebhookDisabled":
        return { ...state, status: "disabled", disabledReason: event.data.reason };
      case "WebhookSecretRotated":
        return {
          ...state,
          secret: event.data.secret,
          previous: { secret: event.data.previous, validUntil: event.data.previousValidUntil },
        };
    }
  },
  decide(command, state) {
    if (command.type === "CreateWebhook") {
      if (state.status !== "none") throw new DomainError("already_exists", `webhook ${command.data.id} already exists`);
      checkWebhookUrl(command.data.url);
      checkText("name", command.data.name, 200);
      checkText("description", command.data.description, 2000);
      return [{ type: "WebhookCreated", data: { ...command.data } }];
    }
    if (!isLive(state)) throw notFound("webhook");
    switch (command.type) {
      case "UpdateWebhook": {
        const url = command.data.url ?? state.url;
        const name = command.data.name === undefined ? state.name : command.data.name;
        const description = command.data.description === undefined ? state.description : command.data.description;
        checkWebhookUrl(url);
        checkText("name", name, 200);
        checkText("description", description, 2000);
        if (url === state.url && name === state.name && description === state.description) return [];
        return [{ type: "WebhookUpdated", data: { id: state.id, url, name, description, at: command.data.at } }];
      }
      case "PauseWebhook":
        return state.status === "paused" ? [] : [{ type: "WebhookPaused", data: { ...command.data } }];
      case "ResumeWebhook":
        return state.status === "active" ? [] : [{ type: "WebhookResumed", data: { ...command.data } }];
      case "DisableWebhook":
        // Only a webhook still sending can be disabled; a paused one is the user's choice already.
        return state.status === "active" ? [{ type: "WebhookDisabled", data: { ...command.data } }] : [];
      case "RotateWebhookSecret":
        return [{ type: "WebhookSecretRotated", data: { ...command.data, previous: state.secret } }];
      case "DeleteWebhook":
        return [{ type: "WebhookDeleted", data: { id: state.id, ownerId: state.ownerId, at: command.data.at } }];
    }
  },
};
