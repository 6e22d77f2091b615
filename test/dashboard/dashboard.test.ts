import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { TestServer } from "../harness/server.js";
import { ensureChromium } from "../harness/chromium.js";
import { eventually } from "../harness/receiver.js";

// The web dashboard in headless Chromium (Debian's package, driven by puppeteer-core) against the
// real server: sign in with a key held in page memory, deploy a component (validation errors in
// place first), see an event arrive live over SSE, search it, see a failing run on $errors;
// deploy a workflow, run it from its page, see its emits and its errors (the failing step named)
// arrive live; connect an account, see its deletion refused while a source binds it, delete it.
// Takes the screenshots dashboard.png, dashboard-deploy.png, dashboard-errors.png and
// dashboard-workflow.png: into docs/ for the README when HEADWATER_SCREENSHOTS=docs, else into a
// temporary directory (so a test run leaves the tree as it was).

// Callbacks below run in the page, where these exist (the project compiles without the DOM library).
declare const document: any, localStorage: any, sessionStorage: any;

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const shots =
  process.env.HEADWATER_SCREENSHOTS === "docs" ? path.join(repoRoot, "docs") : fs.mkdtempSync(path.join(os.tmpdir(), "hw-dashboard-"));

const COMPONENT = `export default {
  name: "Order intake",
  version: "0.1.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) {
    if (event.body?.fail) throw new Error("payment provider said no: " + event.body.fail);
    console.log("order", event.body?.order);
    this.$emit(event.body, { summary: "order " + event.body?.order });
  },
};`;

/** An HTTP-triggered workflow: a step that throws when the request asks it to, a registry action, a step that emits. */
const WORKFLOW = (indent: number) => `name: Order pipeline
trigger: http
steps:
  - name: check
    code: |
      async (steps, $) => {
        const order = steps.trigger.event.body ?? {};
        if (order.fail) throw new Error("payment provider said no: " + order.fail);
        return order;
      }
  - name: format
    action: helper_functions-format-json
    props: { value: "{{steps.check.$return_value}}", indent: ${indent} }
  - name: notify
    code: |
      async (steps, $) => {
        $.export("$summary", "order " + steps.check.$return_value.order);
        $.send.emit({ raw_event: { order: steps.check.$return_value.order, text: steps.format.$return_value } });
      }
`;

/** A source whose props offer options: a static list, a remote list paged by context, a remote list that fails. */
const CHOICES = `export default {
  name: "Choices",
  version: "0.1.0",
  props: {
    region: { type: "string", optional: true },
    size: { type: "string", options: [{ label: "Small", value: "small" }, { label: "Large", value: "large" }] },
    item: {
      type: "integer",
      async options({ prevContext }) {
        const from = prevContext?.next ?? 0;
        const items = [from, from + 1].filter((n) => n < 3);
        return { options: items.map((n) => ({ label: this.region + " item " + n, value: n })), context: from + 2 < 3 ? { next: from + 2 } : {} };
      },
    },
    broken: { type: "string", optional: true, async options() { throw new Error("no list today"); } },
  },
  async run() {},
};`;

/** A source whose component has an app prop: it binds a connected account. */
const APP_SOURCE = `export default {
  name: "Acme contacts",
  version: "0.1.0",
  props: { acme: { type: "app", app: "acme" }, http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ keyed: Boolean(this.acme.$auth.api_key) }); },
};`;

describe("web dashboard (headless Chromium, real server)", function () {
  this.timeout(120_000);
  const server = new TestServer();
  let browser: Browser | undefined;
  let page: Page;
  const requestedUrls: string[] = [];
  const pageErrors: string[] = [];

  before(async function () {
    this.timeout(900_000); // a first run may install chromium
    const chromium = ensureChromium();
    if ("missing" in chromium) {
      process.stderr.write(`\n!!! SKIPPING the dashboard browser tests: ${chromium.missing} !!!\n\n`);
      this.skip();
    }
    await server.start();
    browser = await puppeteer.launch({
      executablePath: chromium.path,
      headless: true,
      // Root in a container: Chromium's own sandbox needs user namespaces it may not have.
      args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("request", (request) => requestedUrls.push(request.url()));
    page.on("pageerror", (error) => pageErrors.push(String(error)));
  });
  after(async () => {
    await browser?.close();
    await server.stop();
  });

  const text = (selector: string) => page.$eval(selector, (el) => (el as any).innerText);

  it("serves the page with a strict policy, and signs in with a key kept out of every URL", async () => {
    const response = await page.goto(`${server.url}/`, { waitUntil: "networkidle0" });
    const headers = response!.headers();
    expect(headers["content-security-policy"]).to.include("script-src 'self'").and.include("frame-ancestors 'none'");
    expect(headers["content-security-policy"]).not.to.include("unsafe-inline");
    expect(headers["x-content-type-options"]).to.equal("nosniff");

    // The key field has the focus and a label.
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("api-key");
    expect(await text("label[for=api-key]")).to.equal("API key");

    await page.type("#api-key", "hw_" + "x".repeat(40));
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#sign-in-error")?.textContent?.includes("unknown or revoked"));

    await page.$eval("#api-key", (el) => ((el as any).value = ""));
    await page.type("#api-key", server.bootstrapKey);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#view-sources:not([hidden])");
    expect(await text("#who")).to.include("operator");
    expect(await page.evaluate(() => localStorage.length + sessionStorage.length + document.cookie.length)).to.equal(0);
  });

  it("deploys an uploaded component, showing the API's validation errors next to the code first", async () => {
    await page.goto(`${server.url}/#/deploy`);
    await page.waitForSelector("#view-deploy:not([hidden])");
    await page.type("#deploy-name", "orders");
    await page.$eval("#deploy-code", (el) => ((el as any).value = "export default { name: 5, run() {} }"));
    await page.click("#deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#deploy-code-error")?.textContent ?? "").includes("name must be a string"));
    expect(await page.$eval("#deploy-code", (el) => el.getAttribute("aria-invalid"))).to.equal("true");
    expect(await page.evaluate(() => document.activeElement?.id), "focus moves to the field in error").to.equal("deploy-code");

    // Uploading a file fills the code field.
    const file = path.join(os.tmpdir(), `hw-dashboard-${process.pid}.mjs`);
    fs.writeFileSync(file, COMPONENT);
    const upload = await page.$("#deploy-file");
    await (upload as any).uploadFile(file);
    await page.waitForFunction(() => (document.querySelector("#deploy-code")?.value ?? "").includes("Order intake"));
    fs.rmSync(file, { force: true });
    await page.$eval("#deploy-props", (el) => ((el as any).value = "{not json"));
    await page.click("#deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#deploy-props-error")?.textContent ?? "").includes("not JSON"));
    await page.$eval("#deploy-props", (el) => ((el as any).value = ""));

    await page.click("#deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#deploy-result")?.textContent ?? "").startsWith("Deployed"));
    expect(await text("#deploy-result")).to.match(/^Deployed orders \(dc_\w+\)\. Endpoint: http:\/\/\S+\/e\/\w+$/);
    expect(await page.$eval("#deploy-code", (el) => el.getAttribute("aria-invalid"))).to.equal(null);
    await page.screenshot({ path: path.join(shots, "dashboard-deploy.png") });

    await page.goto(`${server.url}/#/sources`);
    await page.waitForFunction(() => (document.querySelector("#sources-body")?.textContent ?? "").includes("orders"));
    expect(await text("#sources-body"))
      .to.include("active")
      .and.include("/e/");
  });

  it("shows an event arriving live over SSE, pretty-printed and searchable, and a failing run on $errors", async () => {
    await page.click("#sources-body a");
    await page.waitForSelector("#view-source:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    const endpoint = await text("#source-endpoint");
    const sourceId = /dc_\w+/.exec(page.url())![0];

    for (const order of ["A-1001", "B-2002"]) {
      const r = await fetch(`${endpoint}/orders`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ order, items: [{ sku: "tea", qty: 2 }] }),
      });
      expect(r.status).to.equal(200);
    }
    await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("B-2002"), { timeout: 20_000 });
    const first = await text("#stream-items li:first-child pre");
    expect(first, "pretty-printed, newest first").to.include('"order": "B-2002"').and.include("\n");

    await page.type("#stream-filter", "a-1001");
    await page.waitForFunction(() => document.querySelectorAll("#stream-items li").length === 1);
    expect(await text("#stream-count")).to.equal("1 of 2 shown");
    expect(await page.$eval("#stream-items mark", (el) => el.textContent)).to.equal("A-1001");
    await page.$eval("#stream-filter", (el) => ((el as any).value = ""));

    // Keyboard: the stream tabs move with the arrow keys.
    await page.focus("#tab-events");
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowRight");
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("tab-errors");
    expect(await page.$eval("#tab-errors", (el) => el.getAttribute("aria-selected"))).to.equal("true");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");

    const failing = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"fail":"card declined"}',
    });
    expect(failing.status).to.equal(200);
    await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("card declined"), {
      timeout: 20_000,
    });
    expect(await page.$eval("#stream-items li", (el) => el.className)).to.include("failed");
    expect(await text("#stream-items li .badge")).to.equal("$errors");
    await page.screenshot({ path: path.join(shots, "dashboard-errors.png") });

    // Back to the events for the README's picture, with one more order arriving live.
    await page.click("#tab-events");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"order":"C-3003","items":[{"sku":"cake","qty":1}]}',
    });
    await page.waitForFunction(() => (document.querySelector("#stream-items li:first-child")?.textContent ?? "").includes("C-3003"));
    await page.screenshot({ path: path.join(shots, "dashboard.png"), fullPage: false });

    expect(fs.statSync(path.join(shots, "dashboard.png")).size).to.be.greaterThan(10_000);
    // Streams were opened with stream tokens; the key itself never travelled in a URL.
    expect(requestedUrls.some((u) => u.includes(`/sources/${sourceId}/sse?stream_token=st_`))).to.equal(true);
    expect(requestedUrls.filter((u) => u.includes(server.bootstrapKey.slice(3)))).to.deep.equal([]);
  });

  it("deploys a workflow from a pasted definition, showing the API's validation errors in place first", async () => {
    await page.goto(`${server.url}/#/workflows`);
    await page.waitForSelector("#view-workflows:not([hidden])");
    // Loaded: the view's heading has the focus (typing earlier would lose keys to it).
    await page.waitForFunction(() => document.activeElement?.id === "workflows-title");
    expect(await page.$eval("nav [data-view=workflows]", (el) => el.getAttribute("aria-current"))).to.equal("page");
    await page.type("#workflow-key", "orders-pipeline");
    await page.$eval("#workflow-definition", (el, text) => ((el as any).value = text), WORKFLOW(99));
    await page.click("#workflow-deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#workflow-definition-error")?.textContent ?? "").includes("at most"));
    const problem = await text("#workflow-definition-error li");
    expect(problem, "the path, the step's name, the line and the message").to.include("steps[1].props.indent");
    expect(problem).to.include("“format”").and.include("line 13").and.include("must be at most 8");
    expect(await page.$eval("#workflow-definition", (el) => el.getAttribute("aria-invalid"))).to.equal("true");
    // The focus is in the definition, on the line in error.
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("workflow-definition");
    const selected = await page.$eval("#workflow-definition", (el: any) => el.value.slice(el.selectionStart, el.selectionEnd));
    expect(selected).to.include("indent: 99");

    // Text that is not YAML: the line where reading stopped.
    await page.$eval("#workflow-definition", (el) => ((el as any).value = "name: [unclosed"));
    await page.click("#workflow-deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#workflow-definition-error")?.textContent ?? "").includes("YAML"));
    expect(await text("#workflow-definition-error")).to.include("line 1");

    await page.$eval("#workflow-definition", (el, text) => ((el as any).value = text), WORKFLOW(2));
    await page.click("#workflow-deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#workflow-deploy-result")?.textContent ?? "").startsWith("Deployed"));
    expect(await text("#workflow-deploy-result")).to.match(
      /^Deployed Order pipeline \(p_\w+, version 1\)\. Endpoint: http:\/\/\S+\/e\/\w+$/,
    );
    expect(await page.$eval("#workflow-definition", (el) => el.getAttribute("aria-invalid"))).to.equal(null);
    expect(await text("#workflow-definition-error")).to.equal("");
    await page.waitForFunction(() => (document.querySelector("#workflows-body")?.textContent ?? "").includes("Order pipeline"));
    expect(await page.$$eval("#workflows-body ol.step-names li", (items) => items.map((i) => i.textContent))).to.deep.equal([
      "check",
      "format",
      "notify",
    ]);
  });

  it("runs a workflow from its page, and follows its emits, its $errors (the failing step named) and its logs live", async () => {
    await page.click("#workflows-body a");
    await page.waitForSelector("#view-workflow:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#wf-stream-state")?.textContent === "live");
    const workflowId = /p_\w+/.exec(page.url())![0];
    expect(await text("#workflow-title")).to.equal("Order pipeline");
    expect(await text("#workflow-facts"))
      .to.include(workflowId)
      .and.include("orders-pipeline")
      .and.include("HTTP");
    const endpoint = await text("#workflow-endpoint");
    expect(await page.$$eval("#workflow-steps > li strong", (items) => items.map((i) => i.textContent))).to.deep.equal([
      "check",
      "format",
      "notify",
    ]);

    // An event that is not JSON is refused in place; a good one runs every step.
    await page.type("#workflow-event", "{nope");
    await page.click("#workflow-run");
    await page.waitForFunction(() => (document.querySelector("#workflow-event-error")?.textContent ?? "").includes("not JSON"));
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("workflow-event");
    await page.$eval("#workflow-event", (el) => ((el as any).value = ""));
    await page.type("#workflow-event", '{"body": {"order": "W-1001"}}');
    await page.click("#workflow-run");
    await page.waitForFunction(() => (document.querySelector("#workflow-run-result")?.textContent ?? "").startsWith("Run ok"), {
      timeout: 30_000,
    });
    expect(await text("#workflow-run-result")).to.equal("Run ok: 3 step(s), 1 event(s) emitted.");
    expect(await page.$$eval("#workflow-run-steps .badge", (items) => items.map((i) => i.textContent))).to.deep.equal(["ok", "ok", "ok"]);
    expect(await text("#workflow-run-steps li:nth-child(2) pre"), "the action's return value").to.include("W-1001");

    // The run's emit arrives live in Emits.
    await page.waitForFunction(() => (document.querySelector("#wf-stream-items")?.textContent ?? "").includes("W-1001"), {
      timeout: 20_000,
    });
    expect(await text("#wf-stream-items li:first-child pre"))
      .to.include('"raw_event": {')
      .and.include('"order": "W-1001"');

    // A failing request, then a good one: the error arrives on the stream too, but not in Emits.
    for (const body of ['{"fail":"card declined"}', '{"order":"W-1002"}']) {
      const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body });
      expect(r.status).to.equal(200);
    }
    await page.waitForFunction(() => (document.querySelector("#wf-stream-items")?.textContent ?? "").includes("W-1002"), {
      timeout: 20_000,
    });
    expect(await text("#wf-stream-items")).not.to.include("card declined");
    expect(await page.$$eval("#wf-stream-items li", (items) => items.length)).to.equal(2);

    // $errors: the listed error, then one arriving live, each naming the step that threw, with its stack.
    await page.focus("#wf-tab-emits");
    await page.keyboard.press("ArrowRight");
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("wf-tab-errors");
    await page.waitForFunction(() => document.querySelector("#wf-stream-state")?.textContent === "live");
    await page.waitForFunction(() => (document.querySelector("#wf-stream-items")?.textContent ?? "").includes("card declined"));
    const failing = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"fail":"insufficient funds"}',
    });
    expect(failing.status).to.equal(200);
    await page.waitForFunction(() => (document.querySelector("#wf-stream-items")?.textContent ?? "").includes("insufficient funds"), {
      timeout: 20_000,
    });
    expect(await page.$eval("#wf-stream-items li", (el) => el.className)).to.include("failed");
    expect(await text("#wf-stream-items li .badge")).to.equal("$errors");
    expect(await text("#wf-stream-items li .step-name")).to.equal("check");
    expect(await text("#wf-stream-items li pre.stack")).to.include("Error: payment provider said no: insufficient funds");
    expect(await text("#wf-stream-items li .failed-step")).to.include("USER_ERROR");

    // Searching the errors opens the event of the one that matches.
    await page.type("#wf-stream-filter", "card declined");
    await page.waitForFunction(() => document.querySelectorAll("#wf-stream-items li").length === 1);
    expect(await page.$eval("#wf-stream-items li details", (el) => (el as any).open)).to.equal(true);
    await page.$eval("#wf-stream-filter", (el) => ((el as any).value = ""));
    await page.$eval("#wf-stream-filter", (el) => el.dispatchEvent(new (el.ownerDocument.defaultView as any).Event("input")));

    // A failing run by hand says which step failed; the steps after it did not run.
    await page.$eval("#workflow-event", (el) => ((el as any).value = '{"body": {"fail": "expired card"}}'));
    await page.click("#workflow-run");
    await page.waitForFunction(() => (document.querySelector("#workflow-run-result")?.textContent ?? "").startsWith("Run failed"), {
      timeout: 30_000,
    });
    expect(await text("#workflow-run-result"))
      .to.include("in step check")
      .and.include("expired card")
      .and.include("USER_ERROR");
    expect(await page.$$eval("#workflow-run-steps .badge", (items) => items.map((i) => i.textContent))).to.deep.equal([
      "failed",
      "not run",
      "not run",
    ]);
    await page.waitForFunction(() => (document.querySelector("#wf-stream-items li")?.textContent ?? "").includes("expired card"), {
      timeout: 20_000,
    });
    await page.screenshot({ path: path.join(shots, "dashboard-workflow.png"), fullPage: true });
    expect(fs.statSync(path.join(shots, "dashboard-workflow.png")).size).to.be.greaterThan(10_000);

    // Logs: every run with its lines, the failed ones marked.
    await page.focus("#wf-tab-errors");
    await page.keyboard.press("ArrowRight");
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("wf-tab-logs");
    await page.waitForFunction(() => document.querySelector("#wf-stream-state")?.textContent === "live");
    await page.waitForFunction(() => document.querySelectorAll("#wf-stream-items li").length >= 5);
    expect(await text("#wf-stream-items"))
      .to.include("step notify: order W-1002")
      .and.include("manual run failed");
    await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: '{"order":"W-1003"}' });
    await page.waitForFunction(() => (document.querySelector("#wf-stream-items li:first-child")?.textContent ?? "").includes("W-1003"), {
      timeout: 20_000,
    });
    expect(requestedUrls.some((u) => u.includes(`/workflows/${workflowId}/sse?stream_token=st_`))).to.equal(true);
  });

  it("deletes a workflow after asking in place", async () => {
    const workflowId = /p_\w+/.exec(page.url())![0];
    await page.click("#workflow-delete");
    await page.waitForSelector("#workflow-confirm:not([hidden])");
    expect(await page.evaluate(() => document.activeElement?.id), "the safe choice has the focus").to.equal("workflow-confirm-no");
    expect(await text("#workflow-confirm")).to.include("Delete Order pipeline?");
    await page.keyboard.press("Escape");
    await page.waitForSelector("#workflow-confirm[hidden]", { hidden: true });
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("workflow-delete");
    expect((await server.client().get(`/v1/workflows/${workflowId}`)).status).to.equal(200);

    await page.click("#workflow-delete");
    await page.click("#workflow-confirm-yes");
    await page.waitForSelector("#view-workflows:not([hidden])");
    await page.waitForFunction(() => (document.querySelector("#workflows-body")?.textContent ?? "").includes("No workflows yet"));
    expect((await server.client().get(`/v1/workflows/${workflowId}`)).status).to.equal(404);
  });

  it("connects an account without ever showing its credentials, and refuses to delete it while a source binds it", async () => {
    await page.goto(`${server.url}/#/accounts`);
    await page.waitForSelector("#view-accounts:not([hidden])");
    await page.waitForFunction(() => document.activeElement?.id === "accounts-title");
    // Refused in place before anything is sent.
    await page.click("#account-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#account-app-error")?.textContent ?? "").includes("name the app"));
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("account-app");

    await page.type("#account-app", "acme");
    await page.type("#account-name", "work");
    expect(await page.$eval("#account-field-value-1", (el) => (el as any).type)).to.equal("password");
    await page.type("#account-field-name-1", "api_key");
    await page.type("#account-field-value-1", "sk-live-0123456789");
    await page.click("#account-add-field");
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("account-field-name-2");
    await page.type("#account-field-name-2", "region");
    await page.type("#account-field-value-2", "eu-secret-region");
    await page.click("#account-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#account-result")?.textContent ?? "").startsWith("Connected"));
    expect(await text("#account-result")).to.match(/^Connected the acme account “work” \(apn_\w+\) with the fields api_key, region\./);
    await page.waitForFunction(() => (document.querySelector("#accounts-body")?.textContent ?? "").includes("work"));
    expect(await text("#accounts-body")).to.include("api_key, region");
    // The values are nowhere in the page any more: not in the inputs, not in the DOM.
    expect(await page.$$eval("input[type=password]", (inputs) => inputs.map((i) => (i as any).value).join(""))).to.equal("");
    const html = await page.content();
    expect(html).not.to.include("sk-live-0123456789");
    expect(html).not.to.include("eu-secret-region");

    const admin = server.client();
    const account = (await admin.get("/v1/users/me/accounts")).body.data.find((a: any) => a.name === "work");
    const bound = await admin.post("/v1/sources", {
      component_code: APP_SOURCE,
      name: "acme-contacts",
      configured_props: { acme: { authProvisionId: account.id } },
    });
    expect(bound.status, JSON.stringify(bound.body)).to.equal(200);

    await page.click("#accounts-body button");
    await page.waitForSelector("#account-confirm-yes");
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("account-confirm-no");
    await page.click("#account-confirm-yes");
    await page.waitForFunction(() => (document.querySelector("#account-error")?.textContent ?? "").includes("Not deleted"));
    expect(await text("#account-error"))
      .to.include(`account ${account.id} is bound by source ${bound.body.data.id}`)
      .and.include("acme-contacts");
    expect(await page.$eval("#account-error a", (el) => el.getAttribute("href"))).to.equal(`#/source/${bound.body.data.id}`);
    expect(await text("#accounts-body")).to.include("work");

    expect((await admin.delete(`/v1/sources/${bound.body.data.id}`)).status).to.be.oneOf([200, 204]);
    await page.click("#accounts-body button");
    await page.click("#account-confirm-yes");
    await page.waitForFunction(() => (document.querySelector("#accounts-body")?.textContent ?? "").includes("No connected accounts yet"));
    expect((await admin.get(`/v1/accounts/${account.id}`)).status).to.equal(404);
  });

  it("lists webhooks with their delivery attempts, subscriptions, and usage", async () => {
    const admin = server.client();
    const source = (await admin.get("/v1/users/me/sources")).body.data[0];
    // A receiver that refuses: the attempt is recorded as failed (loopback is not reachable without the private-network flag).
    const hook = (await admin.post(`/v1/webhooks?url=${encodeURIComponent("https://hooks.invalid/orders")}&name=orders-hook`)).body.data;
    expect((await admin.post("/v1/subscriptions", { emitter_id: source.id, listener_id: hook.id })).status).to.equal(200);
    await fetch(source.configured_props.http.endpoint_url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"order":"C-3"}',
    });

    await page.goto(`${server.url}/#/webhooks`);
    await page
      .waitForFunction(() => (document.querySelector("#webhooks-body")?.textContent ?? "").includes("orders-hook"), { timeout: 10_000 })
      .catch(async (error) => {
        throw new Error(`${error}; url ${page.url()}; page errors: ${pageErrors.join(" | ")}; view: ${await text("main")}`);
      });
    const deadline = Date.now() + 30_000;
    for (;;) {
      await page.click("#webhooks-body button");
      await page.waitForSelector("#deliveries:not([hidden])");
      if ((await text("#deliveries-body")).includes("failed")) break;
      if (Date.now() > deadline) throw new Error("no failed attempt shown");
      await new Promise((r) => setTimeout(r, 500));
    }

    await page.goto(`${server.url}/#/subscriptions`);
    await page.waitForFunction((id) => (document.querySelector("#subscriptions-body")?.textContent ?? "").includes(id), {}, hook.id);

    await page.goto(`${server.url}/#/usage`);
    await page.waitForFunction(() => (document.querySelector("#usage-body")?.textContent ?? "").includes("Signed in as operator"));

    await page.click("#sign-out");
    await page.waitForSelector("#sign-in:not([hidden])");
    expect(await page.$eval("#app", (el) => (el as any).hidden)).to.equal(true);
  });

  it("switches to an organization's workspace: its lists, and what is created there belongs to it", async () => {
    const admin = server.client();
    const me = (await admin.get("/v1/users/me")).body.data;
    const org = server.cli("admin", "org", "create", "--name", "Tea Traders", "--owner", me.id).json;
    expect(org.id, JSON.stringify(org)).to.match(/^o_/);

    // The user's organizations are read at sign-in.
    await page.type("#api-key", server.bootstrapKey);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#view-sources:not([hidden])");
    await page.waitForFunction(() => (document.querySelector("#sources-body")?.textContent ?? "").includes("orders"));
    expect(await page.$eval("#workspace-field", (el) => (el as any).hidden)).to.equal(false);
    expect(await page.$eval("#workspace", (el) => (el as any).value), "personal first").to.equal("");

    await page.select("#workspace", org.id);
    await page.waitForFunction(
      () => !document.querySelector("#sources-empty")?.hidden && document.querySelectorAll("#sources-body tr").length === 0,
      {
        timeout: 10_000,
      },
    );

    await page.goto(`${server.url}/#/deploy`);
    await page.waitForSelector("#view-deploy:not([hidden])");
    await page.$eval("#deploy-name", (el) => ((el as any).value = ""));
    await page.type("#deploy-name", "org-orders");
    await page.$eval("#deploy-code", (el, code) => ((el as any).value = code), COMPONENT);
    await page.click("#deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#deploy-result")?.textContent ?? "").startsWith("Deployed"));
    const orgSources = (await admin.get(`/v1/orgs/${org.id}/sources`)).body.data.map((x: { name: string }) => x.name);
    const ownSources = (await admin.get("/v1/users/me/sources")).body.data.map((x: { name: string }) => x.name);
    expect(orgSources).to.deep.equal(["org-orders"]);
    expect(ownSources).to.include("orders").and.not.include("org-orders");

    await page.goto(`${server.url}/#/webhooks`);
    await page.waitForSelector("#view-webhooks:not([hidden])");
    expect(await text("#webhooks-body"), "the personal webhook is not the organization's").not.to.include("orders-hook");
    await page.type("#webhook-url", "https://hooks.invalid/tea");
    await page.type("#webhook-name", "tea-hook");
    await page.click("#webhook-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#webhooks-body")?.textContent ?? "").includes("tea-hook"));
    expect((await admin.get(`/v1/orgs/${org.id}/webhooks`)).body.data.map((w: { name: string }) => w.name)).to.deep.equal(["tea-hook"]);

    await page.goto(`${server.url}/#/sources`);
    await page.waitForFunction(() => (document.querySelector("#sources-body")?.textContent ?? "").includes("org-orders"));
    expect(await page.$$eval("#sources-body tr", (rows) => rows.length), "only the organization's").to.equal(1);
    await page.select("#workspace", "");
    await page.waitForFunction(
      () => {
        const t = document.querySelector("#sources-body")?.textContent ?? "";
        return t.includes("orders") && !t.includes("org-orders");
      },
      { timeout: 10_000 },
    );
    expect(pageErrors).to.deep.equal([]);
  });

  it("lists the props that offer options and writes a choice into the configured props, a remote list page by page", async () => {
    await page.goto(`${server.url}/#/deploy`);
    await page.waitForSelector("#view-deploy:not([hidden])");
    await page.$eval("#deploy-name", (el) => ((el as any).value = ""));
    await page.$eval("#deploy-code", (el, code) => ((el as any).value = code), CHOICES);
    await page.$eval("#deploy-props", (el) => ((el as any).value = '{"region": "eu"}'));
    await page.click("#deploy-choices-button");
    // A static list is there at once.
    await page.waitForFunction(() => document.querySelectorAll("#deploy-choice-size option").length === 3);
    await page.select("#deploy-choice-size", "1");
    await page.waitForFunction(() => JSON.parse(document.querySelector("#deploy-props").value).size === "large");
    // A remote list is loaded with the props typed so far, then its next page.
    await page.click("#deploy-choices .choice:nth-child(2) button");
    await page.waitForFunction(() => document.querySelectorAll("#deploy-choice-item option").length === 3);
    expect(await page.$$eval("#deploy-choice-item option", (els) => els.map((e) => (e as any).textContent))).to.deep.equal([
      "—",
      "eu item 0",
      "eu item 1",
    ]);
    const more = await page.$$("#deploy-choices .choice:nth-child(2) button:not([hidden])");
    await more[more.length - 1].click();
    await page.waitForFunction(() => document.querySelectorAll("#deploy-choice-item option").length === 4);
    await page.select("#deploy-choice-item", "2");
    await page.waitForFunction(() => JSON.parse(document.querySelector("#deploy-props").value).item === 2);
    expect(JSON.parse(await page.$eval("#deploy-props", (el) => (el as any).value))).to.deep.equal({
      region: "eu",
      size: "large",
      item: 2,
    });
    // A failing options() shows its message in place.
    await page.click("#deploy-choices .choice:nth-child(3) button");
    await page.waitForFunction(() =>
      (document.querySelector("#deploy-choices .choice:nth-child(3) .error")?.textContent ?? "").includes("no list today"),
    );
    await page.click("#deploy-form button[type=submit]");
    await page.waitForFunction(() => (document.querySelector("#deploy-result")?.textContent ?? "").startsWith("Deployed"));
  });
  it("shows hostile names, events, logs and errors as text: nothing in them runs or becomes markup", async () => {
    const hostile = `<img src=x onerror="window.__pwned='img'"><script>window.__pwned='script'</script>`;
    const admin = server.client();
    const component = `export default {
      name: "hostile",
      version: "0.1.0",
      props: { http: { type: "$.interface.http" } },
      async run(event) {
        console.log(event.body.html);
        if (event.body.fail) throw new Error(event.body.html);
        this.$emit({ html: event.body.html, "<b onmouseover=x>": 1 }, { summary: event.body.html });
      },
    };`;
    const deployed = await admin.post("/v1/sources", { component_code: component, name: hostile });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const hook = await admin.post("/v1/webhooks", { url: "https://hooks.invalid/x", name: hostile });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(200);
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });

    await page.goto(`${server.url}/#/sources`);
    if (await page.$eval("#sign-in", (el) => !(el as any).hidden)) {
      await page.type("#api-key", server.bootstrapKey);
      await page.keyboard.press("Enter");
    }
    await page.waitForSelector("#view-sources:not([hidden])");
    if (await page.$("#workspace")) await page.select("#workspace", "").catch(() => undefined);
    await page.waitForFunction(() => (document.querySelector("#sources-body")?.textContent ?? "").includes("<img src=x"));
    await page.goto(`${server.url}/#/source/${source.id}`);
    await page.waitForSelector("#view-source:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    for (const fail of [false, true]) {
      const r = await fetch(source.configured_props.http.endpoint_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ html: hostile, fail }),
      });
      expect(r.status).to.equal(200);
    }
    await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("<script>"), {
      timeout: 20_000,
    });
    for (const tab of ["#tab-logs", "#tab-errors"]) {
      await page.click(tab);
      await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("<script>"), {
        timeout: 20_000,
      });
    }
    await page.goto(`${server.url}/#/webhooks`);
    await page.waitForFunction(() => (document.querySelector("#webhooks-body")?.textContent ?? "").includes("<img src=x"));

    // Shown as the characters they are; no element of theirs in the page, nothing run.
    expect(await page.evaluate(() => (globalThis as any).__pwned)).to.equal(undefined);
    expect(await page.evaluate(() => document.querySelectorAll("img[src=x], main script, b[onmouseover]").length)).to.equal(0);
    expect(dialogs).to.deep.equal([]);
    expect(pageErrors.filter((e) => e.includes("pwned"))).to.deep.equal([]);
  });
  /** Signed in with `key` on the sources page, whoever was signed in before. */
  async function signInAs(key: string): Promise<void> {
    await page.goto(`${server.url}/#/sources`);
    if (await page.$eval("#sign-out", (el) => !(el as any).hidden)) await page.click("#sign-out");
    await page.waitForSelector("#sign-in:not([hidden])");
    await page.$eval("#api-key", (el) => ((el as any).value = ""));
    await page.type("#api-key", key);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#view-sources:not([hidden])");
  }

  /** The stream clients the server holds open (`/metrics`, open to loopback). */
  async function openStreams(base: string): Promise<number> {
    const metrics = await (await fetch(`${base}/metrics`)).text();
    return Number(/^headwater_sse_clients(?:\{[^}]*\})? (\d+)$/m.exec(metrics)?.[1]);
  }

  const countOf = (needle: string) =>
    page.$$eval("#stream-items li", (items, n) => items.filter((li) => ((li as any).textContent ?? "").includes(n)).length, needle);

  it("follows the back and forward buttons: each page shown again, one stream open at a time", async () => {
    await signInAs(server.bootstrapKey);
    const deployed = await server.client().post("/v1/sources", { component_code: COMPONENT, name: "history" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const before = await openStreams(server.url);

    await page.goto(`${server.url}/#/source/${source.id}`);
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    await page.goto(`${server.url}/#/deploy`);
    await page.waitForSelector("#view-deploy:not([hidden])");
    await page.goBack();
    await page.waitForSelector("#view-source:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    expect(page.url()).to.include(`#/source/${source.id}`);
    expect(await text("#source-endpoint")).to.equal(source.configured_props.http.endpoint_url);
    await page.goBack();
    await page.waitForSelector("#view-sources:not([hidden])");
    expect(await page.$eval("nav [aria-current=page]", (el) => (el as any).dataset.view)).to.equal("sources");
    await page.goForward();
    await page.waitForSelector("#view-source:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");

    const r = await fetch(`${source.configured_props.http.endpoint_url}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ order: "H-4004" }),
    });
    expect(r.status).to.equal(200);
    await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("H-4004"), { timeout: 20_000 });
    expect(await countOf("H-4004")).to.equal(1);
    // Every page left closed its stream: one more than before, the one on screen.
    expect(Number.isInteger(before), "the gauge is read").to.equal(true);
    await eventually(async () => ((await openStreams(server.url)) === before + 1 ? true : undefined), 10_000, "one stream open");
  });

  it("ends the session when its key is revoked elsewhere: the open stream ends, the sign-in form says why, and signing in again returns to the page", async () => {
    const created = server.cli("admin", "user", "create", "--username", "revoked", "--email", "revoked@example.com");
    expect(created.status, created.stderr).to.equal(0);
    const browserKey = created.json.api_key as string;
    const other = await server.client(browserKey).post("/v1/users/me/api_keys", { name: "terminal" });
    expect(other.status).to.equal(200);
    const terminal = server.client(other.body.data.api_key);
    const deployed = await terminal.post("/v1/sources", { component_code: COMPONENT, name: "watched" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;

    await signInAs(browserKey);
    await page.goto(`${server.url}/#/source/${source.id}`);
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    const keys = await terminal.get("/v1/users/me/api_keys");
    const browserKeyId = keys.body.data.find((k: { id: string }) => k.id !== other.body.data.id).id;
    expect((await terminal.delete(`/v1/users/me/api_keys/${browserKeyId}`)).status).to.equal(204);

    // The server ends the stream; the page finds the key refused and goes back to the sign-in form.
    await page.waitForSelector("#sign-in:not([hidden])", { timeout: 30_000 });
    expect(await page.$eval("#app", (el) => (el as any).hidden)).to.equal(true);
    expect(await text("#sign-in-error")).to.include("no longer accepts this API key");
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal("api-key");
    expect(page.url(), "the page's address is kept").to.include(`#/source/${source.id}`);
    expect(await page.evaluate(() => document.querySelector("#who")?.hidden)).to.equal(true);

    // The revoked key is refused at sign-in; the other key signs in and lands on the same page.
    await page.type("#api-key", browserKey);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#sign-in-error")?.textContent?.includes("unknown or revoked"));
    await page.$eval("#api-key", (el) => ((el as any).value = ""));
    await page.type("#api-key", other.body.data.api_key);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#view-source:not([hidden])");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    expect(await text("#sign-in-error")).to.equal("");
  });

  it("keeps following a stream across a restart of the server: it reconnects and resumes, nothing lost or repeated", async () => {
    await signInAs(server.bootstrapKey);
    const deployed = await server.client().post("/v1/sources", { component_code: COMPONENT, name: "restarted" });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    const source = deployed.body.data;
    const endpoint = source.configured_props.http.endpoint_url as string;
    const post = async (order: string) => {
      const r = await fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ order }) });
      expect(r.status).to.equal(200);
    };
    await page.goto(`${server.url}/#/source/${source.id}`);
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    await post("R-5001");
    await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("R-5001"), { timeout: 20_000 });

    // The same node again on the same address, its data kept (what an operator's restart is).
    const port = new URL(server.url).port;
    await server.stop();
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "reconnecting", { timeout: 20_000 });
    const restarted = new TestServer({
      dataDir: server.dataDir,
      bootstrapKey: server.bootstrapKey,
      mode: server.mode,
      ...(server.cluster ? { cluster: server.cluster } : {}),
      env: { PORT: port },
    });
    try {
      await restarted.start(60_000);
      expect(restarted.url).to.equal(server.url);
      await post("R-5002");
      await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live", { timeout: 30_000 });
      await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("R-5002"), {
        timeout: 20_000,
      });
      await post("R-5003");
      await page.waitForFunction(() => (document.querySelector("#stream-items")?.textContent ?? "").includes("R-5003"), {
        timeout: 20_000,
      });
      for (const order of ["R-5001", "R-5002", "R-5003"]) expect(await countOf(order), order).to.equal(1);
      expect(await page.$$eval("#stream-items li", (items) => items.length)).to.equal(3);
      // The session outlived the restart: the key, held in the page, still works.
      await page.goto(`${server.url}/#/sources`);
      await page.waitForFunction(() => (document.querySelector("#sources-body")?.textContent ?? "").includes("restarted"));
      expect(await page.$eval("#sign-in", (el) => (el as any).hidden)).to.equal(true);
    } finally {
      await restarted.stop();
    }
  });
});
