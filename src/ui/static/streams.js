// A page's live streams (a source's or a workflow's): tabs following the WAI-ARIA tabs pattern,
// each listing the kept items then following new ones over SSE, newest first, pretty-printed,
// with a search box that filters and highlights. The elements are found by a prefix:
// #<prefix>-tabs (the tablist), -panel, -filter, -count, -state and -items.
import { $, h, clear, time, highlighted } from "./dom.js";

const KEPT = 200;

/** A run log's console lines (the items of $logs), one per line. */
export function logText(run) {
  const lines = (run.lines ?? []).map((l) => `${new Date(l.ts).toISOString().slice(11, 23)} ${l.level.padEnd(6)} ${l.message}`);
  if (run.error) lines.push(`error: ${run.error.name}: ${run.error.message}`);
  return lines.join("\n");
}

/**
 * How an item is shown by default: run logs as their lines, anything else as indented JSON.
 * Returns the searchable text, whether it is a failure, and the item's body for a search query.
 */
export function describeItem(item) {
  const channel = item.metadata?.name;
  const text = channel === "$logs" ? logText(item.event) : (JSON.stringify(item.event, null, 2) ?? "undefined");
  return {
    text,
    failed: channel === "$errors" || (channel === "$logs" && item.event?.ok === false),
    body: (query) => [h("pre", { tabindex: "0", "aria-label": `Event ${item.id}` }, highlighted(text, query))],
  };
}

export class StreamTabs {
  #prefix;
  /** (channel of the selected tab) → {list, follow, accept?}: what the tab shows. */
  #spec;
  #describe;
  #stop;
  /** Bumped by every stream opened or left: a listing that comes back for an older one is dropped. */
  #generation = 0;
  /** The items shown: newest first, at most KEPT. */
  #items = [];

  /**
   * @param prefix the elements' id prefix
   * @param spec (channel) => ({ list: () => Promise<item[]> newest first, follow: (after, handlers) => stop, accept?: (item) => boolean })
   * @param describe (item) => ({ text, failed, body(query) }), default describeItem
   */
  constructor(prefix, spec, describe = describeItem) {
    this.#prefix = prefix;
    this.#spec = spec;
    this.#describe = describe;
    for (const tab of this.#tabs()) {
      tab.addEventListener("click", () => this.select(tab, true));
      tab.addEventListener("keydown", (event) => {
        const all = this.#tabs();
        const at = all.indexOf(tab);
        const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: all.length - 1 }[event.key];
        if (next === undefined) return;
        event.preventDefault();
        this.select(all[(next + all.length) % all.length], true);
      });
    }
    this.#el("filter").addEventListener("input", () => this.#render());
  }

  #el(part) {
    return $(`#${this.#prefix}-${part}`);
  }

  #tabs() {
    return [...this.#el("tabs").querySelectorAll("[role=tab]")];
  }

  /** Selects the first tab (opening its stream) without moving the focus. */
  selectFirst() {
    this.select(this.#tabs()[0], false);
  }

  select(tab, focus) {
    for (const other of this.#tabs()) {
      const selected = other === tab;
      other.setAttribute("aria-selected", String(selected));
      other.tabIndex = selected ? 0 : -1;
    }
    this.#el("panel").setAttribute("aria-labelledby", tab.id);
    if (focus) tab.focus();
    void this.#open(tab.dataset.channel === "" ? undefined : tab.dataset.channel);
  }

  /** Stops the open stream (leaving the page). */
  leave() {
    this.#generation++;
    this.#stop?.();
    this.#stop = undefined;
  }

  #render() {
    const query = this.#el("filter").value.trim();
    const list = clear(this.#el("items"));
    let shown = 0;
    for (const { item, text, failed, body } of this.#items) {
      const haystack = `${text}\n${item.metadata?.summary ?? ""}\n${item.id}`.toLowerCase();
      if (query && !haystack.includes(query.toLowerCase())) continue;
      shown++;
      const channel = item.metadata?.name;
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
          body(query),
        ),
      );
    }
    this.#el("count").textContent = query ? `${shown} of ${this.#items.length} shown` : `${this.#items.length} item(s)`;
  }

  #entry(item) {
    return { item, ...this.#describe(item) };
  }

  async #open(channel) {
    this.leave();
    const mine = this.#generation;
    this.#items = [];
    this.#render();
    const state = this.#el("state");
    const showState = (name, reason) => {
      state.textContent = name === "ended" ? `ended: ${reason}` : name;
      state.className = `badge ${name === "live" ? "ok" : name === "ended" ? "paused" : ""}`;
    };
    showState("connecting");
    const spec = this.#spec(channel);
    let listed;
    try {
      listed = await spec.list();
    } catch (error) {
      if (mine === this.#generation) showState("ended", error.message);
      return;
    }
    if (mine !== this.#generation) return;
    this.#items = listed.map((item) => this.#entry(item));
    this.#render();
    // Resume after the newest listed item; with none, "0-0" replays whatever arrived since the listing.
    this.#stop = spec.follow(listed[0]?.id ?? "0-0", {
      accept: spec.accept,
      onItem: (item) => {
        if (this.#items.some((i) => i.item.id === item.id)) return;
        this.#items.unshift(this.#entry(item));
        this.#items.length = Math.min(this.#items.length, KEPT);
        this.#render();
      },
      onState: showState,
    });
  }
}
