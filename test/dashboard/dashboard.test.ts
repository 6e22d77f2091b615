import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { TestServer } from "../harness/server.js";
import { ensureChromium } from "../harness/chromium.js";

// The web dashboard in headless Chromium (Debian's package, driven by puppeteer-core) against the
// real server: sign in with a key held in page memory, deploy a component (validation errors in
// place first), see an event arrive live over SSE, search it, see a failing run on $errors.
// Saves docs/dashboard.png and docs/dashboard-deploy.png for the README.

// Callbacks below run in the page, where these exist (the project compiles without the DOM library).
declare const document: any, localStorage: any, sessionStorage: any;

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

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
    await page.screenshot({ path: path.join(repoRoot, "docs", "dashboard-deploy.png") });

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
    await page.screenshot({ path: path.join(repoRoot, "docs", "dashboard-errors.png") });

    // Back to the events for the README's picture, with one more order arriving live.
    await page.click("#tab-events");
    await page.waitForFunction(() => document.querySelector("#stream-state")?.textContent === "live");
    await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"order":"C-3003","items":[{"sku":"cake","qty":1}]}',
    });
    await page.waitForFunction(() => (document.querySelector("#stream-items li:first-child")?.textContent ?? "").includes("C-3003"));
    await page.screenshot({ path: path.join(repoRoot, "docs", "dashboard.png"), fullPage: false });

    expect(fs.statSync(path.join(repoRoot, "docs", "dashboard.png")).size).to.be.greaterThan(10_000);
    // Streams were opened with stream tokens; the key itself never travelled in a URL.
    expect(requestedUrls.some((u) => u.includes(`/sources/${sourceId}/sse?stream_token=st_`))).to.equal(true);
    expect(requestedUrls.filter((u) => u.includes(server.bootstrapKey.slice(3)))).to.deep.equal([]);
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
});
