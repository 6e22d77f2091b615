// A generic action for workflows: send an HTTP request and return the parsed response.
import { axios } from "@pipedream/platform";

export default {
  key: "http-send-request",
  name: "Send HTTP Request",
  description: "Send an HTTP request (through the host's guarded HTTP client) and return the response data.",
  version: "1.0.0",
  type: "action",
  props: {
    method: { type: "string", label: "Method", options: ["GET", "POST", "PUT", "PATCH", "DELETE"], default: "GET", optional: true },
    url: { type: "string", label: "URL" },
    data: { type: "object", label: "JSON body", optional: true },
  },
  async run({ $ }) {
    const data = await axios($, { method: this.method ?? "GET", url: this.url, ...(this.data ? { data: this.data } : {}) });
    $.export("$summary", `${this.method ?? "GET"} ${this.url}`);
    return data;
  },
};
