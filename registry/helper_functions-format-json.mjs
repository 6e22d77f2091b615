// A generic action for workflows: pretty-print any value as JSON text.
export default {
  key: "helper_functions-format-json",
  name: "Format JSON",
  description: "Return the given value as indented JSON text.",
  version: "1.0.0",
  type: "action",
  props: {
    value: { type: "any", label: "Value" },
    indent: { type: "integer", label: "Indent", min: 0, max: 8, optional: true, default: 2 },
  },
  async run({ $ }) {
    const text = JSON.stringify(this.value, null, this.indent ?? 2);
    $.export("$summary", `formatted ${text.length} characters`);
    return text;
  },
};
