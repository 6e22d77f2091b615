// A generic action for workflows: keep only some fields of an object.
export default {
  key: "helper_functions-pick-fields",
  name: "Pick Fields",
  description: "Return an object with only the named fields of the input object.",
  version: "1.0.0",
  type: "action",
  props: {
    object: { type: "object", label: "Object" },
    fields: { type: "string[]", label: "Fields to keep" },
  },
  async run({ $ }) {
    const picked = Object.fromEntries(this.fields.filter((f) => f in this.object).map((f) => [f, this.object[f]]));
    $.export("$summary", `kept ${Object.keys(picked).length} of ${this.fields.length} fields`);
    return picked;
  },
};
