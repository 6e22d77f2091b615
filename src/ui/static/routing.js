// Webhooks (with their delivery attempts) and subscriptions: listings and create forms over the
// API's webhooks and subscriptions listings of the current workspace (the user's own or an
// organization's) and /v1/webhooks/{id}/deliveries.
import { get, post, listAll, listPath, createPath } from "./api.js";
import { $, h, clear, announce, time } from "./dom.js";

export async function showWebhooks() {
  const hooks = await listAll(listPath("webhooks"));
  const body = clear($("#webhooks-body"));
  $("#deliveries").hidden = true;
  for (const hook of hooks) {
    body.append(
      h(
        "tr",
        {},
        h("th", { scope: "row" }, hook.name ?? "(no name)", h("div", { class: "id" }, hook.id)),
        h("td", {}, h("code", { class: "url" }, hook.url)),
        h("td", {}, h("span", { class: `badge ${hook.active ? "ok" : "paused"}` }, hook.status ?? (hook.active ? "active" : "paused"))),
        h(
          "td",
          {},
          h(
            "button",
            { type: "button", class: "small", onclick: () => void showDeliveries(hook) },
            "Show attempts",
            h("span", { class: "visually-hidden" }, ` of ${hook.name ?? hook.id}`),
          ),
        ),
      ),
    );
  }
  if (hooks.length === 0) body.append(h("tr", {}, h("td", { colspan: 4 }, "No webhooks yet.")));
}

async function showDeliveries(hook) {
  const attempts = (await get(`/v1/webhooks/${encodeURIComponent(hook.id)}/deliveries?limit=100`)).data;
  const section = $("#deliveries");
  section.hidden = false;
  $("#deliveries-title").textContent = `Delivery attempts of ${hook.name ?? hook.id}`;
  const body = clear($("#deliveries-body"));
  for (const attempt of attempts) {
    const delivered = attempt.status === "delivered";
    const outcome = delivered
      ? `delivered (HTTP ${attempt.response_code})`
      : `failed: ${attempt.response_code ? `HTTP ${attempt.response_code}` : (attempt.error ?? "no answer")}${
          attempt.next_attempt_at_ms ? `; next try ${time(attempt.next_attempt_at_ms)}` : ""
        }`;
    body.append(
      h(
        "tr",
        { class: delivered ? "" : "failed" },
        h("td", {}, time(attempt.attempted_at_ms)),
        h("td", {}, h("code", {}, attempt.event_id), attempt.event_name ? ` (${attempt.event_name})` : ""),
        h("td", {}, String(attempt.attempt)),
        h("td", {}, outcome),
        h("td", {}, `${attempt.latency_ms} ms`),
      ),
    );
  }
  if (attempts.length === 0) body.append(h("tr", {}, h("td", { colspan: 5 }, "No attempts yet.")));
  $("#deliveries-title").setAttribute("tabindex", "-1");
  $("#deliveries-title").focus();
}

export async function showSubscriptions() {
  // Not paginated: the seed's listing answers every subscription at once.
  const subscriptions = (await get(listPath("subscriptions"))).data;
  const body = clear($("#subscriptions-body"));
  for (const s of subscriptions) {
    body.append(
      h(
        "tr",
        {},
        h("td", {}, h("code", {}, s.emitter_id)),
        h("td", {}, h("code", {}, s.listener_id)),
        h("td", {}, s.event_name || "(default)"),
      ),
    );
  }
  if (subscriptions.length === 0) body.append(h("tr", {}, h("td", { colspan: 3 }, "No subscriptions yet.")));
}

function formError(target, input, error) {
  $(target).textContent = error.details?.length ? error.details.map((d) => `${d.path}: ${d.message}`).join("; ") : error.message;
  input?.setAttribute("aria-invalid", "true");
  input?.focus();
}

export function setUpRouting() {
  $("#webhook-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const url = $("#webhook-url");
    $("#webhook-error").textContent = "";
    url.removeAttribute("aria-invalid");
    try {
      const name = $("#webhook-name").value.trim();
      await post(createPath("/v1/webhooks"), { url: url.value.trim(), ...(name ? { name } : {}) });
      url.value = "";
      $("#webhook-name").value = "";
      announce("Webhook created");
      await showWebhooks();
    } catch (error) {
      formError("#webhook-error", url, error);
    }
  });

  $("#subscription-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("#subscription-error").textContent = "";
    try {
      await post(createPath("/v1/subscriptions"), {
        emitter_id: $("#sub-emitter").value.trim(),
        listener_id: $("#sub-listener").value.trim(),
        event_name: $("#sub-channel").value.trim(),
      });
      announce("Subscribed");
      await showSubscriptions();
    } catch (error) {
      formError("#subscription-error", $("#sub-emitter"), error);
    }
  });
}
