import { given } from "../testing.js";
import { webhook, type WebhookCreated } from "./webhook.js";

const secret = { $sealed: "v1.x.y.z" };
const created: WebhookCreated = {
  type: "WebhookCreated",
  data: {
    id: "wh_1",
    ownerId: "u_1",
    creatorId: "u_1",
    url: "https://example.com/hook?x=1",
    name: "hook",
    description: null,
    secret,
    at: 1,
  },
};
const create = (url: string) => ({ type: "CreateWebhook" as const, data: { ...created.data, url } });

describe("commands/webhooks", () => {
  it("takes http and https URLs with a hostname, a port, a path and a query; refuses the rest", () => {
    given(webhook).when(create("https://example.com/hook?x=1")).then([created]);
    for (const url of ["http://127.0.0.1:8080/in", "https://hooks.example.com:8443/a/b?c=d"]) {
      given(webhook)
        .when(create(url))
        .then([{ ...created, data: { ...created.data, url } }]);
    }
    for (const url of [
      "ftp://example.com/x",
      "not a url",
      "mailto:a@example.com",
      "file:///etc/passwd",
      "https://",
      `https://example.com/${"a".repeat(2100)}`,
    ]) {
      given(webhook).when(create(url)).thenRejected("invalid_request", /url/);
    }
  });
  it("updates, pauses and resumes; a disabled webhook comes back when resumed", () => {
    given(webhook, created)
      .when({ type: "UpdateWebhook", data: { id: "wh_1", name: "renamed", at: 2 } })
      .then([{ type: "WebhookUpdated", data: { id: "wh_1", url: created.data.url, name: "renamed", description: null, at: 2 } }]);
    given(webhook, created)
      .when({ type: "UpdateWebhook", data: { id: "wh_1", name: "hook", at: 2 } })
      .then([]);
    given(webhook, created)
      .when({ type: "UpdateWebhook", data: { id: "wh_1", url: "gopher://x", at: 2 } })
      .thenRejected("invalid_request");
    given(webhook, created)
      .when({ type: "PauseWebhook", data: { id: "wh_1", at: 2 } })
      .then([{ type: "WebhookPaused", data: { id: "wh_1", at: 2 } }]);
    given(webhook, created)
      .when({ type: "ResumeWebhook", data: { id: "wh_1", at: 2 } })
      .then([]);
    const disabled = { type: "WebhookDisabled" as const, data: { id: "wh_1", reason: "failing for 24 h", at: 3 } };
    given(webhook, created).when({ type: "DisableWebhook", data: disabled.data }).then([disabled]);
    given(webhook, created, disabled)
      .when({ type: "ResumeWebhook", data: { id: "wh_1", at: 4 } })
      .then([{ type: "WebhookResumed", data: { id: "wh_1", at: 4 } }]);
    given(webhook, created, { type: "WebhookPaused", data: { id: "wh_1", at: 2 } })
      .when({ type: "DisableWebhook", data: disabled.data })
      .then([]);
  });
  it("rotates the secret, keeping the previous one valid for a while; deletes once", () => {
    const next = { $sealed: "v1.n.e.w" };
    given(webhook, created)
      .when({ type: "RotateWebhookSecret", data: { id: "wh_1", secret: next, previousValidUntil: 100, at: 2 } })
      .then([{ type: "WebhookSecretRotated", data: { id: "wh_1", secret: next, previous: secret, previousValidUntil: 100, at: 2 } }]);
    const deleted = { type: "WebhookDeleted" as const, data: { id: "wh_1", ownerId: "u_1", at: 3 } };
    given(webhook, created)
      .when({ type: "DeleteWebhook", data: { id: "wh_1", at: 3 } })
      .then([deleted]);
    given(webhook, created, deleted)
      .when({ type: "PauseWebhook", data: { id: "wh_1", at: 4 } })
      .thenRejected("not_found");
    given(webhook)
      .when({ type: "DeleteWebhook", data: { id: "wh_1", at: 4 } })
      .thenRejected("not_found");
  });
});
