// Emits only the body of each HTTP request.
export default {
  key: "http-new-requests-payload-only",
  name: "New Requests (Payload Only)",
  description: "Emit the body of every HTTP request sent to this source's endpoint.",
  version: "1.0.0",
  props: {
    http: "$.interface.http",
  },
  async run(event) {
    this.$emit(event.body, { summary: `payload of ${event.method} ${event.path}` });
  },
};
