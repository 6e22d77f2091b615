// Deploy: paste or upload a component, optional name and props; the API's validation errors are
// shown next to the field they concern (details paths: component.* → code, configured_props.* →
// props, body.name → name), the rest above the button.
import { post, createPath } from "./api.js";
import { $, h, clear, announce } from "./dom.js";

const FIELDS = {
  name: { input: "#deploy-name", error: "#deploy-name-error" },
  code: { input: "#deploy-code", error: "#deploy-code-error" },
  props: { input: "#deploy-props", error: "#deploy-props-error" },
};

function fieldOf(path) {
  if (/^(body\.)?name$/.test(path)) return "name";
  if (/^(body\.)?(configured_props)(\.|$)/.test(path)) return "props";
  if (/^(component|body\.component_code|body\.component_files|body\.component_entry)(\.|$)/.test(path)) return "code";
  return undefined;
}

function resetErrors() {
  for (const field of Object.values(FIELDS)) {
    clear($(field.error));
    $(field.input).removeAttribute("aria-invalid");
  }
  clear($("#deploy-error"));
  $("#deploy-result").textContent = "";
}

function showErrors(error) {
  const details = error.details.length > 0 ? error.details : [{ path: "", message: error.message }];
  let first;
  for (const detail of details) {
    const field = fieldOf(detail.path);
    if (!field) {
      $("#deploy-error").append(h("p", {}, detail.path ? `${detail.path}: ${detail.message}` : detail.message));
      continue;
    }
    const where = detail.path.replace(/^body\./, "");
    const target = $(FIELDS[field].error);
    target.append(target.tagName === "UL" ? h("li", {}, `${where}: ${detail.message}`) : `${detail.message}`);
    $(FIELDS[field].input).setAttribute("aria-invalid", "true");
    first ??= $(FIELDS[field].input);
  }
  if (error.details.length > 0 && !first) first = $("#deploy-code");
  (first ?? $("#deploy-code")).focus();
  announce(`Not deployed: ${details.length} problem(s)`);
}

export function setUpDeploy() {
  $("#deploy-file").addEventListener("change", async (event) => {
    const file = event.target.files?.[0];
    if (!file) return;
    $("#deploy-code").value = await file.text();
    announce(`Loaded ${file.name}`);
  });

  $("#deploy-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    resetErrors();
    const code = $("#deploy-code").value;
    const name = $("#deploy-name").value.trim();
    const propsText = $("#deploy-props").value.trim();
    if (code.trim() === "") {
      showErrors({ details: [{ path: "body.component_code", message: "paste or upload the component's code" }] });
      return;
    }
    let props;
    if (propsText !== "") {
      try {
        props = JSON.parse(propsText);
      } catch (error) {
        showErrors({ details: [{ path: "configured_props", message: `not JSON: ${error.message}` }] });
        return;
      }
    }
    const button = event.submitter ?? $("#deploy-form button[type=submit]");
    button.disabled = true;
    $("#deploy-result").textContent = "Deploying…";
    try {
      const body = { component_code: code, ...(name ? { name } : {}), ...(props !== undefined ? { configured_props: props } : {}) };
      const source = (await post(createPath("/v1/sources"), body)).data;
      const endpoint = source.configured_props?.http?.endpoint_url;
      $("#deploy-result").replaceChildren(
        "Deployed ",
        h("a", { href: `#/source/${encodeURIComponent(source.id)}` }, source.name),
        ` (${source.id})`,
        ...(endpoint ? [". Endpoint: ", h("code", {}, endpoint)] : ["."]),
      );
      announce(`Deployed ${source.name}`);
    } catch (error) {
      $("#deploy-result").textContent = "";
      showErrors(error);
    } finally {
      button.disabled = false;
    }
  });
}
