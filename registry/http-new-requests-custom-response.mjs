// Emits every HTTP request and answers it with a configurable status and body.
export default {
  key: "http-new-requests-custom-response",
  name: "New Requests (Custom Response)",
  description: "Emit every HTTP request and answer the caller with the configured status, headers and body.",
  version: "1.0.0",
  props: {
    http: { type: "$.interface.http", customResponse: true },
    status: { type: "integer", label: "Response status", min: 100, max: 599, default: 200, optional: true },
    body: { type: "string", label: "Response body", optional: true, default: "" },
    contentType: { type: "string", label: "Content-Type", optional: true, default: "text/plain" },
  },
  async run(event) {
    this.$emit(event, { summary: `${event.method} ${event.path}` });
    this.http.respond({
      status: this.status ?? 200,
      headers: { "content-type": this.contentType ?? "text/plain" },
      body: this.body ?? "",
    });
  },
};
