// Emits every HTTP request sent to the source's endpoint (method, path, query, headers, body).
export default {
  key: "http-new-requests",
  name: "New Requests",
  description: "Emit every HTTP request sent to this source's endpoint, answering 200 at once.",
  version: "1.0.0",
  props: {
    http: { type: "$.interface.http", customResponse: false },
  },
  async run(event) {
    this.$emit(event, { summary: `${event.method} ${event.path}`, ts: Date.now() });
  },
};
