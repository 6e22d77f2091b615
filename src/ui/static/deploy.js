// Deploy: paste or upload a component, optional name and props; the API's validation errors are
// shown next to the field they concern (details paths: component.* → code, configured_props.* →
// props, body.name → name), the rest above the button. "Choose prop values" saves the code as a
// component and lists the props that offer options: a list is loaded on demand (an options()
// method runs with the props configured so far, page after page), and a choice is written into
// the configured props.
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

/** The configured props as typed so far, or undefined (with the error shown) when they are not a JSON object. */
function typedProps() {
  const text = $("#deploy-props").value.trim();
  if (text === "") return {};
  try {
    const parsed = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed;
  } catch (error) {
    showErrors({ details: [{ path: "configured_props", message: `not JSON: ${error.message}` }] });
    return undefined;
  }
  showErrors({ details: [{ path: "configured_props", message: "must be a JSON object" }] });
  return undefined;
}

const hasNextPage = (context) =>
  typeof context === "object" && context !== null && Object.values(context).some((v) => v !== undefined && v !== null && v !== "");

/** One prop's choices: a select filled page by page ("More" while there are pages), its choice written into the props. */
function choiceRow(componentId, prop) {
  const id = `deploy-choice-${prop.name}`;
  const select = h("select", { id, disabled: true }, h("option", { value: "" }, "—"));
  const status = h("span", { class: "hint", role: "status" });
  const error = h("p", { class: "error" });
  const values = [];
  let page = 0;
  let context = null;
  const more = h("button", { type: "button", hidden: true }, "More");
  const load = async () => {
    const props = typedProps();
    if (props === undefined) return;
    error.textContent = "";
    status.textContent = "loading…";
    more.disabled = true;
    try {
      const path = createPath(`/v1/components/${encodeURIComponent(componentId)}/props/${encodeURIComponent(prop.name)}/options`);
      const answer = (await post(path, { configured_props: props, page, prev_context: context })).data;
      for (const option of answer.options) {
        values.push(option.value);
        select.append(h("option", { value: String(values.length - 1) }, option.label));
      }
      select.disabled = values.length === 0;
      const next = answer.options.length > 0 && (answer.context === null ? prop.remoteOptions === true : hasNextPage(answer.context));
      more.hidden = !next;
      context = answer.context;
      page += 1;
      status.textContent = values.length === 0 ? "no options" : `${values.length} option(s)`;
    } catch (failure) {
      status.textContent = "";
      error.textContent = failure.message;
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", load);
  select.addEventListener("change", () => {
    if (select.value === "") return;
    const props = typedProps();
    if (props === undefined) return;
    props[prop.name] = values[Number(select.value)];
    $("#deploy-props").value = JSON.stringify(props, null, 2);
    announce(`${prop.label ?? prop.name} set`);
  });
  const load0 = prop.remoteOptions ? h("button", { type: "button", onclick: () => load() }, "Load") : undefined;
  if (!prop.remoteOptions) void load();
  return h("div", { class: "choice" }, h("label", { for: id }, prop.label ?? prop.name), " ", select, " ", load0, more, " ", status, error);
}

async function showChoices() {
  resetErrors();
  const box = clear($("#deploy-choices"));
  const code = $("#deploy-code").value;
  if (code.trim() === "") {
    showErrors({ details: [{ path: "body.component_code", message: "paste or upload the component's code" }] });
    return;
  }
  if (typedProps() === undefined) return;
  try {
    const component = (await post(createPath("/v1/components"), { component_code: code })).data;
    const offering = component.configurable_props.filter((p) => Array.isArray(p.options) || p.remoteOptions === true);
    if (offering.length === 0) box.append(h("p", {}, "No prop of this component offers options."));
    for (const prop of offering) box.append(choiceRow(component.id, prop));
  } catch (error) {
    showErrors(error);
  }
}

export function setUpDeploy() {
  $("#deploy-choices-button").addEventListener("click", () => void showChoices());
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
