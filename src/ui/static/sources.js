// Sources: the list (state, endpoint URL), and one source's page with its live streams: events
// (every channel), run logs ($logs) and errors ($errors), each listed then followed over SSE,
// pretty-printed and searchable.
import { get, put, post, listAll, follow } from "./api.js";
import { $, h, clear, announce, time, highlighted, copyButton } from "./dom.js";

const KEPT = 200;
let stopStream;
let current;
/** Bumped by every stream opened or left: a listing that comes back for an older one is dropped. */
let generation = 0;

const endpointOf = (source) => source.configured_props?.http?.endpoint_url;

export async function showSources() {
  const sources = await listAll("/v1/users/me/sources");
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
  generation++;
  stopStream?.();
  stopStream = undefined;
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
  selectTab($("#tab-events"), false);
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

// Tabs: arrow keys move between them (WAI-ARIA tabs pattern), each opens its stream.
const tabs = () => [...document.querySelectorAll("#stream-tabs [role=tab]")];
for (const tab of tabs()) {
  tab.addEventListener("click", () => selectTab(tab, true));
  tab.addEventListener("keydown", (event) => {
    const all = tabs();
    const at = all.indexOf(tab);
    const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: all.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    selectTab(all[(next + all.length) % all.length], true);
  });
}

function selectTab(tab, focus) {
  for (const other of tabs()) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
  }
  $("#stream-panel").setAttribute("aria-labelledby", tab.id);
  if (focus) tab.focus();
  void openStream(tab.dataset.channel === "" ? undefined : tab.dataset.channel);
}

/** The items shown: newest first, at most KEPT. */
let items = [];

function itemText(item) {
  if (item.metadata?.name === "$logs") {
    const run = item.event;
    const lines = (run.lines ?? []).map((l) => `${new Date(l.ts).toISOString().slice(11, 23)} ${l.level.padEnd(6)} ${l.message}`);
    if (run.error) lines.push(`error: ${run.error.name}: ${run.error.message}`);
    return lines.join("\n");
  }
  return JSON.stringify(item.event, null, 2) ?? "undefined";
}

function renderItems() {
  const query = $("#stream-filter").value.trim();
  const list = clear($("#stream-items"));
  let shown = 0;
  for (const { item, text } of items) {
    const haystack = `${text}\n${item.metadata?.summary ?? ""}\n${item.id}`.toLowerCase();
    if (query && !haystack.includes(query.toLowerCase())) continue;
    shown++;
    const channel = item.metadata?.name;
    const failed = channel === "$errors" || (channel === "$logs" && item.event?.ok === false);
    list.append(
      h(
        "li",
        { class: failed ? "item failed" : "item" },
        h(
          "div",
          { class: "item-head" },
          h("time", { datetime: new Date(item.indexed_at_ms).toISOString() }, time(item.indexed_at_ms)),
          h("span", { class: "badge" }, channel === "" || channel === undefined ? "default channel" : channel),
          item.metadata?.summary ? h("span", { class: "summary" }, item.metadata.summary) : null,
          h("code", { class: "id" }, item.id),
        ),
        h("pre", { tabindex: "0", "aria-label": `Event ${item.id}` }, highlighted(text, query)),
      ),
    );
  }
  $("#stream-count").textContent = query ? `${shown} of ${items.length} shown` : `${items.length} item(s)`;
}

$("#stream-filter").addEventListener("input", renderItems);

async function openStream(channel) {
  leaveSource();
  const mine = generation;
  items = [];
  renderItems();
  const state = $("#stream-state");
  state.textContent = "connecting";
  state.className = "badge";
  const sourceId = current.id;
  const query = new URLSearchParams({ expand: "event", limit: "100" });
  if (channel !== undefined) query.set("event_name", channel);
  const listed = (await get(`/v1/sources/${sourceId}/event_summaries?${query}`)).data;
  if (mine !== generation) return;
  items = listed.map((item) => ({ item, text: itemText(item) }));
  renderItems();
  // Resume after the newest listed item; with none, "0-0" replays whatever arrived since the listing.
  stopStream = follow(sourceId, {
    channel,
    after: listed[0]?.id ?? "0-0",
    onItem(item) {
      if (items.some((i) => i.item.id === item.id)) return;
      items.unshift({ item, text: itemText(item) });
      items.length = Math.min(items.length, KEPT);
      renderItems();
    },
    onState(name, reason) {
      state.textContent = name === "ended" ? `ended: ${reason}` : name;
      state.className = `badge ${name === "live" ? "ok" : name === "ended" ? "paused" : ""}`;
    },
  });
}
