// Polls a URL that answers a JSON array and emits each item once (dedupe "unique" on the item id).
export default {
  key: "http-poll-json-url",
  name: "New Items in JSON Feed",
  description: "Poll a URL returning a JSON array (or {items: [...]}) and emit each new item once, keyed by idField.",
  version: "1.0.0",
  dedupe: "unique",
  props: {
    timer: { type: "$.interface.timer", default: { intervalSeconds: 900 } },
    url: { type: "string", label: "Feed URL", description: "An http(s) URL answering JSON" },
    idField: { type: "string", label: "Id field", optional: true, default: "id" },
  },
  methods: {
    async fetchItems() {
      const response = await fetch(this.url, { headers: { accept: "application/json" } });
      if (!response.ok) throw new Error(`${this.url} answered HTTP ${response.status}`);
      const data = await response.json();
      return Array.isArray(data) ? data : Array.isArray(data?.items) ? data.items : [];
    },
    emitItem(item) {
      const id = item?.[this.idField ?? "id"];
      this.$emit(item, { id: id === undefined ? undefined : String(id), summary: `item ${id}` });
    },
  },
  hooks: {
    async deploy() {
      // Emit the newest items on deploy so the source shows something at once.
      const items = await this.fetchItems();
      for (const item of items.slice(-10)) this.emitItem(item);
    },
  },
  async run() {
    for (const item of await this.fetchItems()) this.emitItem(item);
  },
};
