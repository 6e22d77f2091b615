// Sources: the list (state, endpoint URL), and one source's page with its live streams: events
// (every channel), run logs ($logs) and errors ($errors), each listed then followed over SSE,
// pretty-printed and searchable.
import { get, put, post, listAll, listPath, follow } from "./api.js";
import { $, h, clear, announce, time, copyButton } from "./dom.js";
import { StreamTabs } from "./streams.js";

let current;

const endpointOf = (source) => source.configured_props?.http?.endpoint_url;

export async function showSources() {
  const sources = await listAll(listPath("sources"));
  const body = clear($("#sources-body"));
  $("#sources-empty").hidden = sources.length > 0;
  for (const source of sources) {
    const endpoint = endpointOf(source);
    body.append(
      h(
        "tr",
        {},
        h(
          "th",
          { scope: "row" },
          h("a", { href: `#/source/${encodeURIComponent(source.id)}` }, source.name),
          h("div", { class: "id" }, source.id),
        ),
        h("td", {}, h("span", { class: `badge ${source.active ? "ok" : "paused"}` }, source.active ? "active" : "paused")),
        h(
          "td",
          {},
          endpoint ? [h("code", { class: "url" }, endpoint), " ", copyButton(endpoint, `Copy the endpoint URL of ${source.name}`)] : "—",
        ),
        h(
          "td",
          {},
          h(
            "button",
            {
              type: "button",
              class: "small",
              onclick: async () => {
                await put(`/v1/sources/${source.id}`, { active: !source.active });
                announce(`${source.name} ${source.active ? "paused" : "resumed"}`);
                await showSources();
              },
            },
            source.active ? "Pause" : "Resume",
            h("span", { class: "visually-hidden" }, ` ${source.name}`),
          ),
        ),
      ),
    );
  }
}

$("#sources-refresh").addEventListener("click", () => void showSources().then(() => announce("Sources refreshed")));

/** Stops the open stream when leaving a source's page. */
export function leaveSource() {
  streams.leave();
}

function renderFacts(source) {
  const endpoint = endpointOf(source);
  const facts = clear($("#source-facts"));
  const fact = (name, ...value) => facts.append(h("dt", {}, name), h("dd", {}, ...value));
  fact("Id", h("code", {}, source.id));
  fact("State", h("span", { class: `badge ${source.active ? "ok" : "paused"}` }, source.active ? "active" : "paused"));
  if (endpoint)
    fact("Endpoint URL", h("code", { class: "url", id: "source-endpoint" }, endpoint), " ", copyButton(endpoint, "Copy the endpoint URL"));
  fact("Component", h("code", {}, source.component_id));
  fact("Created", time(source.created_at * 1000));
  $("#source-toggle").textContent = source.active ? "Pause" : "Resume";
}

export async function showSource(id) {
  const source = (await get(`/v1/sources/${encodeURIComponent(id)}`)).data;
  current = source;
  $("#source-title").textContent = source.name;
  renderFacts(source);
  $("#source-run-result").textContent = "";
  streams.selectFirst();
}

$("#source-toggle").addEventListener("click", async () => {
  current = (await put(`/v1/sources/${current.id}`, { active: !current.active })).data;
  renderFacts(current);
  announce(current.active ? "Resumed" : "Paused");
});

$("#source-run").addEventListener("click", async () => {
  const result = $("#source-run-result");
  result.textContent = "running…";
  try {
    const outcome = (await post(`/v1/sources/${current.id}/run`, {})).data;
    result.textContent = outcome.ok
      ? `Run ok: ${outcome.emitted.length} event(s) emitted.`
      : `Run failed: ${outcome.error?.message ?? "unknown error"} (see $errors).`;
  } catch (error) {
    result.textContent = `Run refused: ${error.message}`;
  }
});

// The three streams: events of every channel (listed, then followed), $logs and $errors.
const streams = new StreamTabs("stream", (channel) => ({
  list: async () => {
    const query = new URLSearchParams({ expand: "event", limit: "100" });
    if (channel !== undefined) query.set("event_name", channel);
    return (await get(`/v1/sources/${encodeURIComponent(current.id)}/event_summaries?${query}`)).data;
  },
  follow: (after, handlers) => follow("sources", current.id, { channel, after, ...handlers }),
}));
