// Connected accounts: the list (app, name, the names of the credential fields: the API never
// answers their values), a form to connect one (a password input per credential field, emptied
// once sent and never shown again) and Delete, confirmed in place; while sources bind an account
// the API refuses (409 account_in_use) and the page names those sources.
import { post, del, listAll, listPath, createPath } from "./api.js";
import { $, h, clear, announce, time, confirmInline } from "./dom.js";

let rows = 0;

export async function showAccounts() {
  const accounts = await listAll(listPath("accounts"));
  clear($("#account-error"));
  const body = clear($("#accounts-body"));
  for (const account of accounts) {
    const label = account.name ?? account.app;
    const row = h(
      "tr",
      {},
      h("th", { scope: "row" }, account.name ?? "(no name)", h("div", { class: "id" }, account.id)),
      h("td", {}, h("code", {}, account.app)),
      h(
        "td",
        {},
        account.auth_fields.map((field, i) => [i > 0 ? ", " : "", h("code", {}, field)]),
      ),
      h("td", {}, time(account.created_at * 1000)),
      h(
        "td",
        {},
        h(
          "button",
          { type: "button", class: "small", onclick: (event) => void remove(account, row, event.currentTarget) },
          "Delete",
          h("span", { class: "visually-hidden" }, ` ${label} (${account.id})`),
        ),
      ),
    );
    body.append(row);
  }
  if (accounts.length === 0) body.append(h("tr", {}, h("td", { colspan: 5 }, "No connected accounts yet.")));
}

async function remove(account, row, button) {
  const problem = clear($("#account-error"));
  row.parentElement?.querySelector("tr.confirm-row")?.remove();
  const cell = h("td", { colspan: 5 });
  const confirmRow = h("tr", { class: "confirm-row" }, cell);
  row.after(confirmRow);
  const yes = await confirmInline(cell, {
    id: "account-confirm",
    question: `Delete the ${account.app} account ${account.name ?? account.id}? Its credentials are erased; sources must not bind it any more.`,
    confirm: "Delete account",
  });
  confirmRow.remove();
  if (!yes) {
    button.focus();
    return;
  }
  try {
    await del(`/v1/accounts/${encodeURIComponent(account.id)}`);
    announce(`Deleted ${account.name ?? account.id}`);
    await showAccounts();
    $("#accounts-title").focus();
  } catch (error) {
    // Said at once, in one piece: the live region reads it whole.
    const said = [h("p", {}, `Not deleted: ${error.message}`)];
    const sources = (error.details ?? []).map((d) => /^sources\.(.+)$/.exec(d.path)?.[1]).filter(Boolean);
    if (error.code === "account_in_use" && sources.length > 0) {
      let names = new Map();
      try {
        names = new Map((await listAll(listPath("sources"))).map((source) => [source.id, source.name]));
      } catch {
        // the ids alone, then
      }
      said.push(
        h("p", {}, "Sources that bind it:"),
        h(
          "ul",
          {},
          sources.map((id) =>
            h("li", {}, h("a", { href: `#/source/${encodeURIComponent(id)}` }, names.get(id) ?? id), names.has(id) ? ` (${id})` : ""),
          ),
        ),
      );
    }
    problem.replaceChildren(...said);
    button.focus();
  }
}

/** One credential field: its name, and its value in a password input (never shown). */
function fieldRow(name = "") {
  const n = ++rows;
  const row = h(
    "div",
    { class: "auth-row" },
    h("label", { for: `account-field-name-${n}` }, "Field"),
    h("input", {
      id: `account-field-name-${n}`,
      class: "auth-name",
      value: name,
      autocomplete: "off",
      spellcheck: "false",
      placeholder: "api_key",
    }),
    h("label", { for: `account-field-value-${n}` }, "Value"),
    h("input", {
      id: `account-field-value-${n}`,
      class: "auth-value",
      type: "password",
      autocomplete: "off",
      spellcheck: "false",
    }),
    h(
      "button",
      {
        type: "button",
        class: "small",
        "aria-label": `Remove field ${n}`,
        onclick: () => {
          const all = [...document.querySelectorAll("#account-field-rows .auth-row")];
          if (all.length === 1) {
            row.querySelector(".auth-name").value = "";
            row.querySelector(".auth-value").value = "";
            row.querySelector(".auth-name").focus();
            return;
          }
          const next = all[all.indexOf(row) + 1] ?? all[all.indexOf(row) - 1];
          row.remove();
          next.querySelector(".auth-name").focus();
        },
      },
      "Remove",
    ),
  );
  return row;
}

function resetFields() {
  clear($("#account-field-rows")).append(fieldRow());
}

const FIELDS = {
  app: { input: "#account-app", error: "#account-app-error" },
  name: { input: "#account-name", error: "#account-name-error" },
  auth: { input: "#account-field-rows .auth-name", error: "#account-auth-error" },
};

function fieldOf(path) {
  if (/^(body\.)?app$/.test(path)) return "app";
  if (/^(body\.)?name$/.test(path)) return "name";
  if (/^(body\.)?auth([.[]|$)/.test(path)) return "auth";
  return undefined;
}

function resetErrors() {
  for (const field of Object.values(FIELDS)) {
    clear($(field.error));
    for (const input of document.querySelectorAll(field.input)) input.removeAttribute("aria-invalid");
  }
  for (const input of document.querySelectorAll("#account-field-rows input")) input.removeAttribute("aria-invalid");
  clear($("#account-form-error"));
  $("#account-result").textContent = "";
}

/** Problems next to their field; `inputs` marks the exact inputs when known (a field row). */
function showErrors(details, inputs = []) {
  let first;
  for (const detail of details) {
    const field = fieldOf(detail.path);
    if (!field) {
      $("#account-form-error").append(h("p", {}, detail.path ? `${detail.path}: ${detail.message}` : detail.message));
      continue;
    }
    const target = $(FIELDS[field].error);
    const where = detail.path.replace(/^body\./, "");
    target.append(target.tagName === "UL" ? h("li", {}, `${where}: ${detail.message}`) : detail.message);
    const marked = field === "auth" && inputs.length > 0 ? inputs : [$(FIELDS[field].input)];
    for (const input of marked) input.setAttribute("aria-invalid", "true");
    first ??= marked[0];
  }
  (first ?? $("#account-form button[type=submit]")).focus();
  announce(`Not connected: ${details.length} problem(s)`);
}

export function setUpAccounts() {
  resetFields();
  $("#account-add-field").addEventListener("click", () => {
    const row = fieldRow();
    $("#account-field-rows").append(row);
    row.querySelector(".auth-name").focus();
  });

  $("#account-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    resetErrors();
    const app = $("#account-app").value.trim();
    const name = $("#account-name").value.trim();
    const auth = {};
    const problems = [];
    const bad = [];
    for (const row of document.querySelectorAll("#account-field-rows .auth-row")) {
      const field = row.querySelector(".auth-name");
      const value = row.querySelector(".auth-value");
      const key = field.value.trim();
      if (key === "" && value.value === "") continue;
      if (key === "") {
        problems.push({ path: "body.auth", message: "a value needs a field name" });
        bad.push(field);
      } else if (Object.hasOwn(auth, key)) {
        problems.push({ path: `body.auth.${key}`, message: "is given twice" });
        bad.push(field);
      } else if (value.value === "") {
        problems.push({ path: `body.auth.${key}`, message: "needs a value" });
        bad.push(value);
      } else auth[key] = value.value;
    }
    if (app === "") problems.unshift({ path: "body.app", message: "name the app, as app props name it (github, slack, …)" });
    if (problems.length === 0 && Object.keys(auth).length === 0) {
      problems.push({ path: "body.auth", message: "give at least one credential field" });
      bad.push($("#account-field-rows .auth-name"));
    }
    if (problems.length > 0) {
      showErrors(problems, bad);
      return;
    }
    const button = event.submitter ?? $("#account-form button[type=submit]");
    button.disabled = true;
    try {
      const account = (await post(createPath("/v1/accounts"), { app, ...(name ? { name } : {}), auth })).data;
      // The credentials are gone from the page: nothing keeps or shows them after this.
      resetFields();
      $("#account-app").value = "";
      $("#account-name").value = "";
      $("#account-result").textContent =
        `Connected the ${account.app} account ${account.name ? `“${account.name}” ` : ""}(${account.id}) with the fields ${account.auth_fields.join(", ")}. ` +
        "Their values are sealed on the server and never shown again.";
      announce(`Connected ${account.id}`);
      await showAccounts();
    } catch (error) {
      showErrors(error.details?.length ? error.details : [{ path: "", message: error.message }]);
    } finally {
      button.disabled = false;
    }
  });
}
