import { expect } from "chai";
import { checkConfiguredProps, MissingAccountError, openProps, openPropsWithAccounts, REDACTED, viewProps } from "./configuredProps.js";
import { Sealer } from "../secrets/sealer.js";
import type { NormalizedProp } from "../runtime/types.js";

const sealer = new Sealer(Buffer.alloc(32, 3));
const rules = { minTimerSeconds: 60 };
const prop = (p: Partial<NormalizedProp> & { name: string; type: string }): NormalizedProp => ({ optional: false, secret: false, ...p });

describe("sources/configuredProps", () => {
  const props = [
    prop({ name: "http", type: "$.interface.http" }),
    prop({ name: "db", type: "$.service.db" }),
    prop({ name: "timer", type: "$.interface.timer", default: { intervalSeconds: 900 } }),
    prop({ name: "count", type: "integer", min: 1, max: 10 }),
    prop({ name: "tags", type: "string[]", optional: true }),
    prop({ name: "color", type: "string", options: [{ label: "Red", value: "red" }, "blue"], optional: true }),
    prop({ name: "token", type: "string", secret: true }),
    prop({ name: "flag", type: "boolean", optional: true, default: false }),
    prop({ name: "github", type: "app", app: "github", optional: true }),
  ];

  it("accepts good values, fills defaults and seals secrets", () => {
    const { stored, problems } = checkConfiguredProps(props, { count: 3, tags: ["a"], color: "red", token: "t0ps3cret" }, sealer, rules);
    expect(problems).to.deep.equal([]);
    expect(stored).to.deep.include({ timer: { intervalSeconds: 900 }, count: 3, tags: ["a"], color: "red", flag: false });
    expect(JSON.stringify(stored)).to.not.include("t0ps3cret");
    expect(openProps(stored, sealer).token).to.equal("t0ps3cret");
  });

  it("lists every problem with its path", () => {
    const { problems } = checkConfiguredProps(
      props,
      {
        count: 11,
        tags: ["a", 2],
        color: "green",
        db: {},
        extra: 1,
        timer: { intervalSeconds: 5 },
        github: { token: "x" },
      },
      sealer,
      rules,
    );
    expect(problems.map((p) => p.path)).to.have.members([
      "configured_props.extra",
      "configured_props.db",
      "configured_props.timer.intervalSeconds",
      "configured_props.count",
      "configured_props.tags[1]",
      "configured_props.color",
      "configured_props.token",
      "configured_props.github",
    ]);
  });

  it("checks timers: one of intervalSeconds or cron, a valid cron, the minimum interval", () => {
    const timerOnly = [prop({ name: "timer", type: "$.interface.timer" })];
    const paths = (value: unknown) => checkConfiguredProps(timerOnly, { timer: value }, sealer, rules).problems.map((p) => p.message);
    expect(paths({ cron: "0 * * * *" })).to.deep.equal([]);
    expect(paths({ cron: "nope" })[0]).to.match(/not a valid cron/);
    expect(paths({ cron: "* * * * * *" })[0]).to.match(/minimum interval/);
    expect(paths({ intervalSeconds: 60, cron: "0 * * * *" })[0]).to.match(/exactly one/);
    expect(paths({})[0]).to.match(/exactly one/);
  });

  it("refuses values over 64 KB", () => {
    const { problems } = checkConfiguredProps([prop({ name: "blob", type: "string" })], { blob: "x".repeat(70_000) }, sealer, rules);
    expect(problems[0].message).to.match(/over 65536 bytes/);
  });

  it("shows secrets redacted, timers as {cron, interval_seconds}, the endpoint URL; a redacted secret sent back keeps its value", () => {
    const { stored } = checkConfiguredProps(props, { count: 1, token: "abc", timer: { cron: "*/5 * * * *" } }, sealer, rules);
    const view = viewProps(props, stored, "http://h/e/x");
    expect(view).to.deep.include({
      http: { endpoint_url: "http://h/e/x" },
      token: REDACTED,
      timer: { cron: "*/5 * * * *", interval_seconds: 300, timezone: "UTC" },
      count: 1,
    });
    const again = checkConfiguredProps(props, { ...view, timer: { intervalSeconds: 600 } }, sealer, rules, stored);
    expect(again.problems).to.deep.equal([]);
    expect(openProps(again.stored, sealer).token).to.equal("abc");
  });

  it("http_request: the default fills the request, the auth is sealed, answered redacted, kept when sent back redacted", () => {
    const request = [prop({ name: "request", type: "http_request", default: { method: "POST" } })];
    const given = { url: "https://api.example.com/x", auth: { type: "bearer", token: "t0ps3cret" } };
    const { stored, problems } = checkConfiguredProps(request, { request: given }, sealer, rules);
    expect(problems).to.deep.equal([]);
    expect(JSON.stringify(stored)).to.not.include("t0ps3cret");
    expect(openProps(stored, sealer).request).to.deep.equal({ method: "POST", ...given });
    const view = viewProps(request, stored, "");
    expect(view.request).to.deep.equal({ method: "POST", url: "https://api.example.com/x", auth: REDACTED });
    const again = checkConfiguredProps(request, view, sealer, rules, stored);
    expect(again.problems).to.deep.equal([]);
    expect(openProps(again.stored, sealer).request).to.deep.equal({ method: "POST", ...given });
    const asStored = checkConfiguredProps(request, stored, sealer, rules, stored);
    expect(openProps(asStored.stored, sealer).request).to.deep.equal({ method: "POST", ...given });
    expect(checkConfiguredProps(request, { request: { url: 1 } }, sealer, rules).problems).to.deep.equal([
      { path: "configured_props.request.url", message: "must be a string" },
    ]);
    expect(checkConfiguredProps(request, {}, sealer, rules).problems).to.deep.equal([
      { path: "configured_props.request.url", message: "is required" },
    ]);
  });

  it("app props: nothing or {} configures no credentials; an account binding is stored as a reference, inline $auth sealed", async () => {
    const apps = [prop({ name: "http", type: "app", app: "http" }), prop({ name: "github", type: "app", app: "github" })];
    for (const given of [{}, { http: {}, github: null }]) {
      const { stored, problems } = checkConfiguredProps(apps, given, sealer, rules);
      expect(problems, JSON.stringify(given)).to.deep.equal([]);
      expect(stored).to.deep.equal({});
    }
    const bound = checkConfiguredProps(apps, { github: { authProvisionId: "apn_abc123" }, http: { $auth: { k: "v" } } }, sealer, rules);
    expect(bound.problems).to.deep.equal([]);
    expect(bound.stored.github).to.deep.equal({ authProvisionId: "apn_abc123" });
    expect(JSON.stringify(bound.stored.http)).to.not.include('"v"');
    const opened = await openPropsWithAccounts(bound.stored, sealer, async (id) =>
      id === "apn_abc123" ? sealer.seal({ oauth_access_token: "tok" }) : undefined,
    );
    expect(opened).to.deep.equal({ github: { $auth: { oauth_access_token: "tok" } }, http: { $auth: { k: "v" } } });
    const gone = await openPropsWithAccounts(bound.stored, sealer, async () => undefined).catch((e: unknown) => e);
    expect(gone).to.be.instanceOf(MissingAccountError);
    expect((gone as Error).message).to.match(/configured_props.github binds the connected account apn_abc123, which no longer exists/);
    const bad = checkConfiguredProps(apps, { github: { authProvisionId: "apn_x", extra: 1 }, http: "key" }, sealer, rules);
    expect(bad.problems.map((p) => p.path)).to.deep.equal(["configured_props.http", "configured_props.github"]);
  });
});
