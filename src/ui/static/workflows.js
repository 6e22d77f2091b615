// Workflows: the list (trigger, steps, state), a deploy form (a YAML or JSON definition, the API's
// validation errors shown in place, located in the text when they name a step), and one
// workflow's page: its facts and steps in order, Run now with an optional event (each step's
// outcome), Delete (confirmed in place), and three live streams: Emits, $errors (the failing step
// named, with its stack) and Logs.
import { get, post, del, listAll, listPath, createPath, follow } from "./api.js";
import { $, h, clear, announce, time, highlighted, copyButton, confirmInline, pretty } from "./dom.js";
import { StreamTabs, describeItem, logText } from "./streams.js";

let current;

const EXAMPLE = `name: Greeter
trigger: http            # http (an endpoint URL), timer (interval_seconds, or cron and an optional timezone), or none
steps:
  - name: greet          # later steps read steps.greet.$return_value
    code: |
      async (steps, $) => {
        const name = steps.trigger.event.body?.name ?? "world";
        $.send.emit({ raw_event: { hello: name } });
        return { hello: name };
      }
`;

function triggerText(trigger) {
  if (trigger.type === "http") return trigger.respond === "workflow" ? "HTTP (a step answers)" : "HTTP";
  if (trigger.type === "timer")
    return trigger.cron ? `timer: cron ${trigger.cron} (${trigger.timezone ?? "UTC"})` : `timer: every ${trigger.interval_seconds} s`;
  return "none (subscriptions, or by hand)";
}

const stateBadges = (workflow) => [
  h("span", { class: `badge ${workflow.active ? "ok" : "paused"}` }, workflow.active ? "active" : "inactive"),
  workflow.error_workflow ? [" ", h("span", { class: "badge" }, "error workflow")] : null,
];

export async function showWorkflows() {
  const workflows = await listAll(listPath("workflows"));
  const body = clear($("#workflows-body"));
  for (const workflow of workflows) {
    const endpoint = workflow.trigger.endpoint_url;
    body.append(
      h(
        "tr",
        {},
        h(
          "th",
          { scope: "row" },
          h("a", { href: `#/workflow/${encodeURIComponent(workflow.id)}` }, workflow.name),
          h("div", { class: "id" }, `${workflow.id} · key ${workflow.key} · version ${workflow.version}`),
        ),
        h(
          "td",
          {},
          triggerText(workflow.trigger),
          endpoint
            ? [h("br"), h("code", { class: "url" }, endpoint), " ", copyButton(endpoint, `Copy the endpoint URL of ${workflow.name}`)]
            : null,
        ),
        h(
          "td",
          {},
          h(
            "ol",
            { class: "step-names" },
            workflow.steps.map((step) => h("li", {}, step.name)),
          ),
        ),
        h("td", {}, stateBadges(workflow)),
      ),
    );
  }
  if (workflows.length === 0) body.append(h("tr", {}, h("td", { colspan: 4 }, "No workflows yet: deploy one below.")));
}

$("#workflows-refresh").addEventListener("click", () => void showWorkflows().then(() => announce("Workflows refreshed")));

/** Stops the open stream when leaving a workflow's page. */
export function leaveWorkflow() {
  streams.leave();
}

function renderFacts(workflow) {
  const facts = clear($("#workflow-facts"));
  const fact = (name, ...value) => facts.append(h("dt", {}, name), h("dd", {}, ...value));
  const endpoint = workflow.trigger.endpoint_url;
  fact("Id", h("code", {}, workflow.id));
  if (workflow.description) fact("Description", workflow.description);
  fact("Key", h("code", {}, workflow.key), " (deploying this key again makes a new version)");
  fact("Version", `${workflow.version} `, h("span", { class: "id" }, workflow.deployment_id));
  fact("State", stateBadges(workflow));
  fact("Trigger", triggerText(workflow.trigger));
  if (endpoint)
    fact(
      "Endpoint URL",
      h("code", { class: "url", id: "workflow-endpoint" }, endpoint),
      " ",
      copyButton(endpoint, "Copy the endpoint URL"),
    );
  fact("Updated", time(workflow.updated_at * 1000));
}

function renderSteps(workflow) {
  const list = clear($("#workflow-steps"));
  for (const step of workflow.steps) {
    const props = Object.keys(step.props ?? {}).length > 0 ? h("pre", { class: "props", tabindex: "0" }, pretty(step.props)) : null;
    list.append(
      h(
        "li",
        {},
        h(
          "div",
          { class: "step-head" },
          h("strong", {}, step.name),
          h("span", { class: "badge" }, step.kind),
          h("code", { class: "id" }, step.component_id),
          h("span", { class: "id" }, `cell ${step.cell_id}`),
        ),
        props,
      ),
    );
  }
}

export async function showWorkflow(id) {
  const workflow = (await get(`/v1/workflows/${encodeURIComponent(id)}`)).data;
  current = workflow;
  $("#workflow-title").textContent = workflow.name;
  renderFacts(workflow);
  renderSteps(workflow);
  $("#workflow-run-result").textContent = "";
  clear($("#workflow-run-steps"));
  clear($("#workflow-run-extra"));
  clear($("#workflow-event-error"));
  $("#workflow-event").removeAttribute("aria-invalid");
  $("#workflow-error").textContent = "";
  clear($("#workflow-confirm")).hidden = true;
  streams.selectFirst();
}

// Run now: an optional JSON event (steps.trigger.event), then every step's outcome in order.
$("#workflow-run-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("#workflow-event");
  const problems = clear($("#workflow-event-error"));
  input.removeAttribute("aria-invalid");
  const text = input.value.trim();
  let body = {};
  if (text !== "") {
    try {
      body = { event: JSON.parse(text) };
    } catch (error) {
      problems.append(h("li", {}, `not JSON: ${error.message}`));
      input.setAttribute("aria-invalid", "true");
      input.focus();
      return;
    }
  }
  const button = $("#workflow-run");
  const result = $("#workflow-run-result");
  button.disabled = true;
  result.textContent = "Running…";
  clear($("#workflow-run-steps"));
  clear($("#workflow-run-extra"));
  const workflow = current;
  try {
    showOutcome(workflow, (await post(`/v1/workflows/${encodeURIComponent(workflow.id)}/run`, body)).data);
  } catch (error) {
    result.textContent = `Run refused: ${error.message}`;
  } finally {
    button.disabled = false;
  }
});

const stepNamed = (workflow, cellId) => workflow.steps.find((step) => step.cell_id === cellId)?.name;

function showOutcome(workflow, outcome) {
  // The error event a failed run leaves on $errors is not one of its emits.
  const emitted = `${outcome.emitted.filter((e) => e.channel !== "$errors").length} event(s) emitted`;
  const error = outcome.error;
  let summary;
  if (outcome.ok === null) summary = "The run was not started (the workflow is inactive).";
  else if (!outcome.ok)
    summary = `Run failed in step ${stepNamed(workflow, error?.cell_id) ?? "(unknown)"}: ${error?.name}: ${error?.message} (${error?.code}); ${emitted}.`;
  else if (outcome.exited)
    summary = `Run ended by $.flow.exit in step ${outcome.exited.step}${outcome.exited.reason ? `: ${outcome.exited.reason}` : ""}; ${emitted}.`;
  else summary = `Run ok: ${outcome.steps.length} step(s), ${emitted}.`;
  $("#workflow-run-result").textContent = summary;

  const list = clear($("#workflow-run-steps"));
  for (const step of workflow.steps) {
    const result = outcome.steps.find((s) => s.cell_id === step.cell_id) ?? outcome.steps.find((s) => s.name === step.name);
    const status = !result ? "not run" : !result.ok ? "failed" : result.exited !== undefined ? "exited" : "ok";
    const parts = [];
    if (result?.ok) {
      parts.push(h("p", { class: "label" }, "Return value"), h("pre", { tabindex: "0" }, pretty(result.return_value)));
      if (result.exports && Object.keys(result.exports).length > 0)
        parts.push(h("p", { class: "label" }, "Exports"), h("pre", { tabindex: "0" }, pretty(result.exports)));
    } else if (result && error) {
      parts.push(h("p", { class: "step-error" }, `${error.name}: ${error.message} (${error.code})`));
    }
    list.append(
      h(
        "li",
        { class: `run-step ${status.replace(" ", "-")}` },
        h(
          "div",
          { class: "item-head" },
          h("strong", {}, step.name),
          h(
            "span",
            { class: `badge ${status === "ok" ? "ok" : status === "failed" ? "bad" : ""}` },
            status === "exited" && result.exited ? `exited: ${result.exited}` : status,
          ),
        ),
        parts,
      ),
    );
  }

  const extra = clear($("#workflow-run-extra"));
  if (outcome.response)
    extra.append(
      h("p", { class: "label" }, `HTTP response: ${outcome.response.status}`),
      h("pre", { tabindex: "0" }, pretty(outcome.response.body)),
    );
  if (outcome.logs.length > 0)
    extra.append(h("p", { class: "label" }, "Console"), h("pre", { tabindex: "0" }, logText({ lines: outcome.logs })));
  announce(summary);
}

// Delete, after asking in place.
$("#workflow-delete").addEventListener("click", async () => {
  const workflow = current;
  $("#workflow-error").textContent = "";
  const yes = await confirmInline($("#workflow-confirm"), {
    id: "workflow-confirm",
    question: `Delete ${workflow.name}? Its emits, errors, logs and subscriptions go with it, and its endpoint URL stops answering.`,
    confirm: "Delete workflow",
  });
  if (!yes) {
    $("#workflow-delete").focus();
    return;
  }
  try {
    await del(`/v1/workflows/${encodeURIComponent(workflow.id)}`);
    announce(`Deleted ${workflow.name}`);
    location.hash = "#/workflows";
  } catch (error) {
    $("#workflow-error").textContent = `Not deleted: ${error.message}`;
    $("#workflow-delete").focus();
  }
});

// The three streams. The emits stream is every channel of the workflow, where $errors arrives
// too: the Emits tab leaves those to its own tab.
const logItem = (log) => ({
  id: log.id,
  indexed_at_ms: log.ended_at_ms,
  event: log,
  metadata: { emit_id: null, name: "$logs", emitter_id: current.id, summary: `${log.trigger} run ${log.ok ? "ok" : "failed"}` },
});

const streams = new StreamTabs(
  "wf-stream",
  (channel) => {
    const id = encodeURIComponent(current.id);
    const followed = (after, handlers) => follow("workflows", current.id, { channel, after, ...handlers });
    if (channel === "$errors")
      return { list: async () => (await get(`/v1/workflows/${id}/$errors/event_summaries?expand=event&limit=100`)).data, follow: followed };
    if (channel === "$logs")
      return { list: async () => (await get(`/v1/workflows/${id}/logs?limit=100`)).data.map(logItem), follow: followed };
    return {
      list: async () => (await get(`/v1/workflows/${id}/event_summaries?expand=event&limit=100`)).data,
      follow: followed,
      accept: (item) => item.metadata?.name !== "$errors",
    };
  },
  describeWorkflowItem,
);

/** An error names the step that failed (its cell id in the current version) and shows its stack. */
function describeWorkflowItem(item) {
  const error = item.event?.error;
  if (item.metadata?.name !== "$errors" || !error) return describeItem(item);
  const step = stepNamed(current, error.cellId);
  const stepLabel = step ?? "a step of an earlier version";
  const stack = typeof error.stack === "string" ? error.stack : "";
  const context = pretty({ original_event: item.event.original_event, original_context: item.event.original_context });
  const text = `${stepLabel}\n${error.code}\n${stack}\n${context}`;
  return {
    text,
    failed: true,
    body: (query) => [
      h(
        "p",
        { class: "failed-step" },
        "Failed step: ",
        h("strong", { class: "step-name" }, highlighted(stepLabel, query)),
        ` (${error.cellId}) · ${error.code}${error.ts ? ` · ${time(Date.parse(error.ts))}` : ""}`,
      ),
      h("pre", { class: "stack", tabindex: "0", "aria-label": `Stack of error ${item.id}` }, highlighted(stack, query)),
      h(
        "details",
        { open: query !== "" && context.toLowerCase().includes(query.toLowerCase()) },
        h("summary", {}, "Triggering event and context"),
        h("pre", { tabindex: "0", "aria-label": `Event of error ${item.id}` }, highlighted(context, query)),
      ),
    ],
  };
}

// Deploying: YAML or JSON text, under a key (a new version when the key exists).

const FIELDS = {
  key: { input: "#workflow-key", error: "#workflow-key-error" },
  definition: { input: "#workflow-definition", error: "#workflow-definition-error" },
};

function fieldOf(path) {
  if (/^(body\.)?key$/.test(path)) return "key";
  if (/^(body\.)?definition([.[]|$)/.test(path)) return "definition";
  return undefined;
}

const unquote = (text) => text.replace(/^(["'])(.*)\1$/, "$2");

/**
 * Where each step of a YAML definition starts and ends (lines, 0-based) and its name: best
 * effort, for block-style `steps:` lists; a JSON definition gives names only. Used to name and
 * point at the step a problem's path designates.
 */
function stepsIn(text) {
  try {
    const parsed = JSON.parse(text);
    return Array.isArray(parsed?.steps)
      ? parsed.steps.map((step) => ({ name: typeof step?.name === "string" ? step.name : undefined }))
      : [];
  } catch {
    // YAML: scanned below
  }
  const lines = text.split("\n");
  const from = lines.findIndex((line) => /^steps\s*:\s*(#.*)?$/.test(line));
  if (from < 0) return [];
  const steps = [];
  let indent;
  let i = from + 1;
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*(#.*)?$/.test(line)) continue;
    const lead = /^ */.exec(line)[0].length;
    if (lead === 0 && !line.startsWith("-")) break; // the next top-level key
    const item = /^( *)- +(.*)$/.exec(line);
    if (item && (indent === undefined || item[1].length === indent)) {
      indent = item[1].length;
      if (steps.length > 0) steps.at(-1).end = i;
      steps.push({ line: i, end: lines.length, name: /^name\s*:\s*(.+?)\s*(#.*)?$/.exec(item[2])?.[1] });
    } else if (steps.length > 0 && steps.at(-1).name === undefined && lead === indent + 2) {
      steps.at(-1).name = /^\s*name\s*:\s*(.+?)\s*(#.*)?$/.exec(line)?.[1];
    }
  }
  if (steps.length > 0) steps.at(-1).end = i;
  return steps.map((step) => ({ ...step, name: step.name === undefined ? undefined : unquote(step.name) }));
}

/**
 * The line a problem points at: where the API says the text stopped parsing ("at line N"), else
 * in a YAML definition the line of the step its path names, or of that step's prop.
 */
function lineOf(text, path, message, steps) {
  const unreadable = /at line (\d+), column \d+/.exec(message);
  if (unreadable) return Number(unreadable[1]) - 1;
  const match = /^definition\.steps\[(\d+)\](.*)$/.exec(path);
  const step = match ? steps[Number(match[1])] : undefined;
  if (step?.line === undefined) return undefined;
  const last = /\.([A-Za-z0-9_$-]+)$/.exec(match[2])?.[1];
  if (last) {
    const lines = text.split("\n");
    const key = new RegExp(`(^|[\\s{,])["']?${last.replace(/\$/g, "\\$")}["']?\\s*:`);
    for (let i = step.line; i < step.end; i++) if (key.test(lines[i])) return i;
  }
  return step.line;
}

/** Selects one line of the definition and scrolls it into view. */
function selectLine(textarea, index) {
  const lines = textarea.value.split("\n");
  if (index < 0 || index >= lines.length) return;
  const start = lines.slice(0, index).reduce((n, line) => n + line.length + 1, 0);
  textarea.focus();
  textarea.setSelectionRange(start, start + lines[index].length);
  const lineHeight = textarea.scrollHeight / Math.max(lines.length, 1);
  textarea.scrollTop = Math.max(0, (index - 3) * lineHeight);
}

function resetDeployErrors() {
  for (const field of Object.values(FIELDS)) {
    clear($(field.error));
    $(field.input).removeAttribute("aria-invalid");
  }
  clear($("#workflow-deploy-error"));
  $("#workflow-deploy-result").textContent = "";
}

function showDeployErrors(error, text) {
  const details = error.details.length > 0 ? error.details : [{ path: "", message: error.message }];
  const steps = stepsIn(text);
  const textarea = $("#workflow-definition");
  let firstField;
  let firstLine;
  for (const detail of details) {
    const field = fieldOf(detail.path);
    if (!field) {
      $("#workflow-deploy-error").append(h("p", {}, detail.path ? `${detail.path}: ${detail.message}` : detail.message));
      continue;
    }
    firstField ??= $(FIELDS[field].input);
    $(FIELDS[field].input).setAttribute("aria-invalid", "true");
    if (field === "key") {
      $("#workflow-key-error").append(detail.message);
      continue;
    }
    // The whole definition unreadable: the API's message says where (line and column).
    const whole = detail.path === "definition";
    const message = whole && details.length === 1 ? error.message : detail.message;
    const index = /^definition\.steps\[(\d+)\]/.exec(detail.path)?.[1];
    const name = index === undefined ? undefined : steps[Number(index)]?.name;
    const line = lineOf(text, detail.path, whole ? (error.message ?? "") : "", steps);
    firstLine ??= line;
    const where = detail.path.replace(/^definition\.?/, "") || "definition";
    $("#workflow-definition-error").append(
      h(
        "li",
        {},
        h("code", {}, where),
        name ? ` (step “${name}”)` : "",
        line !== undefined ? `, line ${line + 1}` : "",
        `: ${message}`,
        line !== undefined
          ? [
              " ",
              h(
                "button",
                { type: "button", class: "small", onclick: () => selectLine(textarea, line) },
                "Show",
                h("span", { class: "visually-hidden" }, ` line ${line + 1} of the definition`),
              ),
            ]
          : null,
      ),
    );
  }
  if (firstField === textarea && firstLine !== undefined) selectLine(textarea, firstLine);
  else (firstField ?? $("#workflow-deploy-form button[type=submit]")).focus();
  announce(`Not deployed: ${details.length} problem(s)`);
}

export function setUpWorkflows() {
  $("#workflow-example").addEventListener("click", () => {
    $("#workflow-definition").value = EXAMPLE;
    $("#workflow-definition").focus();
    announce("Example inserted");
  });

  $("#workflow-file").addEventListener("change", async (event) => {
    const file = event.target.files?.[0];
    if (!file) return;
    $("#workflow-definition").value = await file.text();
    // As `headwater workflow deploy <file>` does: the file name without extension is the key.
    if ($("#workflow-key").value.trim() === "") $("#workflow-key").value = file.name.replace(/\.[^.]*$/, "");
    announce(`Loaded ${file.name}`);
  });

  $("#workflow-deploy-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    resetDeployErrors();
    const text = $("#workflow-definition").value;
    const key = $("#workflow-key").value.trim();
    if (text.trim() === "") {
      const message = "paste or upload a definition (YAML or JSON)";
      showDeployErrors({ message, details: [{ path: "definition", message }] }, text);
      return;
    }
    const button = event.submitter ?? $("#workflow-deploy-form button[type=submit]");
    button.disabled = true;
    $("#workflow-deploy-result").textContent = "Deploying…";
    try {
      const workflow = (await post(createPath("/v1/workflows"), { definition: text, ...(key ? { key } : {}) })).data;
      const endpoint = workflow.trigger.endpoint_url;
      $("#workflow-deploy-result").replaceChildren(
        "Deployed ",
        h("a", { href: `#/workflow/${encodeURIComponent(workflow.id)}` }, workflow.name),
        ` (${workflow.id}, version ${workflow.version})`,
        ...(endpoint ? [". Endpoint: ", h("code", {}, endpoint)] : ["."]),
      );
      announce(`Deployed ${workflow.name}, version ${workflow.version}`);
      await showWorkflows();
    } catch (error) {
      $("#workflow-deploy-result").textContent = "";
      showDeployErrors(error, text);
    } finally {
      button.disabled = false;
    }
  });
}
