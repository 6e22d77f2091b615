// The dashboard's entry: sign in, then one view per hash route (#/sources, #/source/dc_…,
// #/deploy, #/workflows, #/workflow/p_…, #/accounts, #/webhooks, #/subscriptions, #/usage). The
// key lives in api.js's memory only.
import { signIn, signOut, signedIn, get, setWorkspace, whenKeyRefused } from "./api.js";
import { $, h, clear, announce } from "./dom.js";
import { showSources, showSource, leaveSource } from "./sources.js";
import { setUpDeploy } from "./deploy.js";
import { showWorkflows, showWorkflow, leaveWorkflow, setUpWorkflows } from "./workflows.js";
import { showAccounts, setUpAccounts } from "./accounts.js";
import { showWebhooks, showSubscriptions, setUpRouting } from "./routing.js";

const VIEWS = ["sources", "source", "deploy", "workflows", "workflow", "accounts", "webhooks", "subscriptions", "usage"];
/** Pages of one item, and the list they belong to in the navigation. */
const PARENT = { source: "sources", workflow: "workflows" };

function showView(name) {
  for (const view of VIEWS) $(`#view-${view}`).hidden = view !== name;
  for (const link of document.querySelectorAll("nav [data-view]")) {
    const current = link.dataset.view === (PARENT[name] ?? name);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function route() {
  if (!signedIn()) return;
  const [, view = "sources", id] = /^#\/([a-z]+)(?:\/(.+))?$/.exec(location.hash) ?? [];
  leaveSource();
  leaveWorkflow();
  const name = VIEWS.includes(view) ? view : "sources";
  showView(name);
  const heading = $(`#view-${name} h2`);
  try {
    if (name === "sources") await showSources();
    else if (name === "source") await showSource(decodeURIComponent(id ?? ""));
    else if (name === "workflows") await showWorkflows();
    else if (name === "workflow") await showWorkflow(decodeURIComponent(id ?? ""));
    else if (name === "accounts") await showAccounts();
    else if (name === "webhooks") await showWebhooks();
    else if (name === "subscriptions") await showSubscriptions();
    else if (name === "usage") await showUsage();
  } catch (error) {
    // A refused key has ended the session already: the sign-in form says why and has the focus.
    if (!signedIn()) return;
    announce(`Could not load: ${error.message}`);
  }
  heading?.setAttribute("tabindex", "-1");
  heading?.focus({ preventScroll: false });
}

function meter(label, used, quota, unit) {
  const id = `meter-${label.replace(/\W+/g, "-").toLowerCase()}`;
  const ratio = quota > 0 ? Math.min(1, used / quota) : 0;
  return h(
    "div",
    { class: "usage" },
    h("label", { for: id }, label),
    h("meter", { id, min: 0, max: quota, value: used, low: quota * 0.7, high: quota * 0.9, optimum: 0 }),
    h("span", {}, `${used.toLocaleString()} of ${quota.toLocaleString()} ${unit} (${Math.round(ratio * 100)}%)`),
  );
}

async function showUsage() {
  const user = (await get("/v1/users/me")).data;
  const body = clear($("#usage-body"));
  body.append(h("p", {}, `Signed in as ${user.username} (${user.email}), ${user.id}.`));
  if (user.daily_invocations_quota !== undefined) {
    body.append(
      h("p", {}, "Free plan: today's usage (UTC day) against the daily quotas."),
      meter("Invocations today", user.daily_invocations_used, user.daily_invocations_quota, "invocations"),
      meter("Compute time today", user.daily_compute_time_used, user.daily_compute_time_quota, "ms"),
    );
  } else {
    const from = new Date(user.billing_period_start_ts * 1000).toLocaleDateString();
    const to = new Date(user.billing_period_end_ts * 1000).toLocaleDateString();
    body.append(
      h("p", {}, `Paid plan: ${user.billing_period_invocations.toLocaleString()} invocations in the billing period ${from} – ${to}.`),
    );
  }
  if (user.orgs?.length)
    body.append(
      h("h3", {}, "Organizations"),
      h(
        "ul",
        {},
        user.orgs.map((o) => h("li", {}, `${o.name} (${o.id})`)),
      ),
    );
}

/**
 * The workspace switch: the user's own resources or one of their organizations'. Lists show the
 * workspace's, and what is created there belongs to it. Shown only to members of an organization.
 */
function offerWorkspaces(user) {
  const select = clear($("#workspace"));
  select.append(h("option", { value: "" }, `Personal (${user.username})`));
  for (const org of user.orgs ?? []) select.append(h("option", { value: org.id }, `${org.name} (organization)`));
  select.value = "";
  setWorkspace(undefined);
  $("#workspace-field").hidden = !(user.orgs?.length > 0);
  select.onchange = () => {
    const org = (user.orgs ?? []).find((o) => o.id === select.value);
    setWorkspace(org ? { id: org.id, name: org.name } : undefined);
    announce(org ? `Workspace: ${org.name}` : "Workspace: personal");
    // An item page belongs to the workspace it was opened from: go back to its list.
    const [, view] = /^#\/([a-z]+)/.exec(location.hash) ?? [];
    if (Object.hasOwn(PARENT, view ?? "")) location.hash = `#/${PARENT[view]}`;
    else void route();
  };
}

function signedInAs(user) {
  $("#sign-in").hidden = true;
  $("#app").hidden = false;
  $("#who").hidden = false;
  $("#who").textContent = `${user.username} · ${user.id}`;
  offerWorkspaces(user);
  $("#sign-out").hidden = false;
  if (!location.hash || location.hash === "#") location.hash = "#/sources";
  else void route();
}

$("#sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("#api-key");
  const error = $("#sign-in-error");
  error.textContent = "";
  input.removeAttribute("aria-invalid");
  if (input.value.trim() === "") {
    error.textContent = "Enter an API key.";
    input.setAttribute("aria-invalid", "true");
    input.focus();
    return;
  }
  try {
    const user = await signIn(input.value);
    input.value = "";
    signedInAs(user);
  } catch (failure) {
    error.textContent = failure.status === 401 ? "This key is unknown or revoked." : `Sign-in failed: ${failure.message}`;
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }
});

/**
 * Back to the sign-in form, the key forgotten. Signing out leaves no trace of the page either; a
 * session the server ended (its key revoked) keeps the page's address, so signing in again
 * returns to it, and says why.
 */
function endSession(refused) {
  signOut();
  leaveSource();
  leaveWorkflow();
  // Nothing typed as a secret outlives the session on the page either.
  for (const input of document.querySelectorAll("input[type=password]")) input.value = "";
  $("#app").hidden = true;
  $("#who").hidden = true;
  $("#workspace-field").hidden = true;
  $("#sign-out").hidden = true;
  $("#sign-in").hidden = false;
  const input = $("#api-key");
  if (refused) {
    $("#sign-in-error").textContent = "Your session ended: the server no longer accepts this API key (revoked?). Sign in again.";
    input.setAttribute("aria-invalid", "true");
  } else {
    $("#sign-in-error").textContent = "";
    input.removeAttribute("aria-invalid");
    history.replaceState(null, "", location.pathname);
  }
  input.focus();
  announce(refused ? "Session ended: the API key was refused" : "Signed out");
}

$("#sign-out").addEventListener("click", () => endSession(false));
whenKeyRefused(() => endSession(true));

window.addEventListener("hashchange", () => void route());
setUpDeploy();
setUpWorkflows();
setUpAccounts();
setUpRouting();
$("#api-key").focus();
