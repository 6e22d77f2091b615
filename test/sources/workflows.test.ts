import { expect } from "chai";
import { EventSource, type FetchLike } from "eventsource";
import { TestServer, type ApiClient } from "../harness/server.js";
import { Receiver, type Received } from "../harness/receiver.js";
import { deploy, eventually, me, sleep } from "./sourcesSupport.js";

// Workflows end to end against the real server process (embedded, or PostgreSQL + Kafka): HTTP
// triggers answering with $.respond, steps reading earlier steps, $.flow.exit, errors on $errors in
// the seed's shape, workflows as listeners and emitters through subscriptions, chains, the global
// error workflow, timers, versions, listings and the live stream.

const SOURCE = `export default {
  name: "Orders", version: "1.0.0",
  props: { http: { type: "$.interface.http" } },
  async run(event) { this.$emit({ order: event.body }, { summary: "order" }); },
};`;

/** An action in the published format, with props, used as a step by file and by inline code. */
const ACTION = `export default {
  key: "wf-test-multiply", name: "Multiply", version: "0.1.0", type: "action",
  props: {
    factor: { type: "integer", label: "Factor", min: 1, max: 10, default: 2 },
    value: { type: "integer", label: "Value" },
  },
  async run({ $ }) {
    const product = this.factor * this.value;
    $.export("$summary", "multiplied " + this.value + " by " + this.factor);
    $.export("product", product);
    return { product };
  },
};`;

describe("workflows (real server)", function () {
  this.timeout(120_000);
  const server = new TestServer({
    env: {
      HEADWATER_ALLOW_PRIVATE_NETWORKS: "1",
      HEADWATER_TIMER_MIN_INTERVAL_SECONDS: "1",
      HEADWATER_WEBHOOK_RETRY_MS: "100",
      HEADWATER_DELIVERY_SWEEP_MS: "200",
    },
  });
  const receiver = new Receiver();
  let admin: ApiClient;
  let other: ApiClient;
  let multiplyId: string;

  const deployWorkflow = async (client: ApiClient, definition: unknown, key?: string) => {
    const r = await client.post("/v1/workflows", { definition, ...(key ? { key } : {}) });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data as {
      id: string;
      version: number;
      deployment_id: string;
      key: string;
      trigger: { endpoint_url?: string };
      steps: { name: string; cell_id: string }[];
    };
  };
  const run = async (client: ApiClient, id: string, event?: unknown) => {
    const r = await client.post(`/v1/workflows/${id}/run`, event === undefined ? {} : { event });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.data;
  };
  const emits = async (client: ApiClient, id: string) => {
    const r = await client.get(`/v1/workflows/${id}/event_summaries?limit=100&expand=event`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return (r.body.data as any[]).slice().reverse();
  };
  const errors = async (client: ApiClient, id: string) => {
    const r = await client.get(`/v1/workflows/${id}/$errors/event_summaries?limit=100&expand=event`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return (r.body.data as any[]).slice().reverse();
  };
  const subscribe = async (client: ApiClient, emitter: string, listener: string, channel?: string) => {
    const r = await client.post(
      `/v1/subscriptions?emitter_id=${encodeURIComponent(emitter)}&listener_id=${listener}${channel === undefined ? "" : `&event_name=${encodeURIComponent(channel)}`}`,
    );
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
  };

  before(async () => {
    await Promise.all([server.start(), receiver.start()]);
    admin = server.client();
    const created = server.cli("admin", "user", "create", "--username", "wfother", "--email", "wfother@example.com", "--plan", "paid");
    other = server.client(created.json.api_key);
    const saved = await admin.post("/v1/components", { component_code: ACTION });
    expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
    multiplyId = saved.body.data.id;
  });
  after(async () => {
    await server.stop();
    await receiver.stop();
  });

  it("an HTTP-triggered workflow answers with $.respond; later steps read earlier return values and exports", async () => {
    const workflow = await deployWorkflow(
      admin,
      `name: Greeter
trigger: { type: http, respond: workflow }
steps:
  - name: parse
    code: |
      async (steps, $) => {
        $.export("name", steps.trigger.event.body.name);
        return { length: steps.trigger.event.body.name.length };
      }
  - name: times
    component_id: ${multiplyId}
    props: { value: "{{steps.parse.$return_value.length}}", factor: 3 }
  - name: answer
    code: |
      async (steps, $) => {
        await $.respond({ status: 201, headers: { "x-workflow": "yes" }, body: { hello: steps.parse.name, product: steps.times.product, method: steps.trigger.event.method } });
      }
`,
    );
    expect(workflow.id).to.match(/^p_[0-9a-z]+$/);
    expect(workflow.deployment_id).to.match(/^d_/);
    expect(workflow.steps.map((s) => s.cell_id).every((id) => /^c_/.test(id))).to.equal(true);
    const answer = await fetch(workflow.trigger.endpoint_url!, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Ada" }),
    });
    expect(answer.status).to.equal(201);
    expect(answer.headers.get("x-workflow")).to.equal("yes");
    expect(await answer.json()).to.deep.equal({ hello: "Ada", product: 9, method: "POST" });
    const logs = await admin.get(`/v1/workflows/${workflow.id}/logs`);
    expect(logs.body.data[0].lines.map((l: any) => l.message)).to.include("step times: multiplied 3 by 3");
  });

  it("an HTTP trigger without respond: workflow answers when queued; emits are listed as {raw_event} and streamed over SSE", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "Emitter",
      trigger: "http",
      steps: [{ name: "emit", code: "async (steps, $) => { $.send.emit({ raw_event: { got: steps.trigger.event.body } }); }" }],
    });
    const received: any[] = [];
    const authorized: FetchLike = (url, init) =>
      fetch(url, { ...init, headers: { ...init.headers, authorization: `Bearer ${server.bootstrapKey}` } });
    const stream = new EventSource(`${server.url}/workflows/${workflow.id}/sse`, { fetch: authorized });
    stream.addEventListener("message", (e) => received.push(JSON.parse(e.data as string)));
    try {
      await eventually("the stream to open", async () => (stream.readyState === EventSource.OPEN ? true : undefined));
      const queued = await fetch(workflow.trigger.endpoint_url!, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"a":1}',
      });
      expect(queued.status).to.equal(200);
      expect(((await queued.json()) as { success: boolean }).success).to.equal(true);
      const listed = await eventually("the emit", async () =>
        (await emits(admin, workflow.id)).length === 1 ? emits(admin, workflow.id) : undefined,
      );
      expect(listed[0].event).to.deep.equal({ raw_event: { got: { a: 1 } } });
      expect(listed[0].metadata).to.include({ emitter_id: workflow.id, name: "" });
      await eventually("the SSE frame", async () => (received.length === 1 ? true : undefined));
      expect(received[0]).to.deep.equal(listed[0]);
    } finally {
      stream.close();
    }
  });

  it("$.flow.exit ends the run successfully and skips the later steps", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "Exiter",
      steps: [
        {
          name: "gate",
          code: 'async (steps, $) => { if (steps.trigger.event.stop) return $.flow.exit("stopped by the event"); return "open"; }',
        },
        { name: "after", code: 'async (steps, $) => { $.send.emit({ raw_event: "after ran" }); return steps.gate.$return_value; }' },
      ],
    });
    const stopped = await run(admin, workflow.id, { stop: true });
    expect(stopped.ok).to.equal(true);
    expect(stopped.exited).to.deep.equal({ reason: "stopped by the event", step: "gate" });
    expect(stopped.steps.map((s: any) => s.name)).to.deep.equal(["gate"]);
    expect(await emits(admin, workflow.id)).to.have.length(0);
    const open = await run(admin, workflow.id, { stop: false });
    expect(open.ok).to.equal(true);
    expect(open.exited).to.equal(null);
    expect(open.steps.map((s: any) => [s.name, s.return_value])).to.deep.equal([
      ["gate", "open"],
      ["after", "open"],
    ]);
    expect((await emits(admin, workflow.id)).map((e) => e.event)).to.deep.equal([{ raw_event: "after ran" }]);
  });

  it("a step that throws produces one $errors event shaped exactly as the seed's table, and stops the run", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "Thrower",
      trigger: { type: "http" },
      steps: [
        { name: "first", code: "async (steps, $) => 1" },
        { name: "breaks", code: 'async (steps, $) => { throw new RangeError("out of range: " + steps.first.$return_value); }' },
        { name: "never", code: 'async (steps, $) => { $.send.emit({ raw_event: "never" }); }' },
      ],
    });
    const failed = await run(admin, workflow.id, { order: 7 });
    expect(failed.ok).to.equal(false);
    expect(failed.error).to.include({ name: "RangeError", message: "out of range: 1", cell_id: workflow.steps[1].cell_id });
    const [error] = await errors(admin, workflow.id);
    expect(Object.keys(error.event).sort()).to.deep.equal(["error", "original_context", "original_event"]);
    expect(error.event.original_event).to.deep.equal({ order: 7 });
    const context = error.event.original_context;
    expect(Object.keys(context).sort()).to.deep.equal(
      ["deployment_id", "id", "owner_id", "platform_version", "source_type", "ts", "verified", "workflow_id"].sort(),
    );
    expect(context).to.include({ workflow_id: workflow.id, deployment_id: workflow.deployment_id, verified: false, source_type: "MANUAL" });
    expect(context.id).to.equal(failed.invocation_id);
    expect(new Date(context.ts).toISOString()).to.equal(context.ts);
    expect(context.owner_id).to.equal((await me(admin)).id);
    expect(context.platform_version).to.be.a("string");
    expect(Object.keys(error.event.error).sort()).to.deep.equal(["cellId", "code", "stack", "ts"]);
    expect(error.event.error.cellId).to.equal(workflow.steps[1].cell_id);
    expect(error.event.error.code).to.be.a("string").and.not.equal("");
    expect(new Date(error.event.error.ts).toISOString()).to.equal(error.event.error.ts);
    expect(error.event.error.stack).to.match(/^RangeError: out of range: 1/);
    expect(error.metadata.name).to.equal("$errors");
    // Errors are not emits, and the step after the failing one never ran.
    expect(await emits(admin, workflow.id)).to.have.length(0);
  });

  it("a workflow listens to a source and posts to a webhook through subscriptions", async () => {
    const source = await deploy(admin, SOURCE);
    const workflow = await deployWorkflow(admin, {
      name: "Order relay",
      steps: [
        {
          name: "shape",
          code: "async (steps, $) => { const o = steps.trigger.event.order; $.send.emit({ raw_event: { id: o.id, total: o.qty * 2 } }); }",
        },
      ],
    });
    const hook = await admin.post(`/v1/webhooks?url=${encodeURIComponent(`${receiver.url}/orders`)}`);
    await subscribe(admin, source.id, workflow.id);
    await subscribe(admin, workflow.id, hook.body.data.id);
    for (const id of [1, 2, 3]) {
      const r = await fetch(source.configured_props.http.endpoint_url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id, qty: id }),
      });
      expect(r.status).to.equal(200);
    }
    const delivered = await receiver.waitFor((r: Received) => r.path === "/orders", 3, 30_000);
    const bodies = delivered.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => b.event.raw_event)).to.deep.equal([
      { id: 1, total: 2 },
      { id: 2, total: 4 },
      { id: 3, total: 6 },
    ]);
    expect(delivered.every((r) => r.headers["x-headwater-emitter-id"] === workflow.id)).to.equal(true);
    const runs = await admin.get(`/v1/workflows/${workflow.id}/logs`);
    expect(runs.body.data.every((l: any) => l.trigger === "subscription")).to.equal(true);
  });

  it("chains two workflows: the second runs on the first's emits (p_* glob), and a cycle is stopped", async () => {
    const first = await deployWorkflow(admin, {
      name: "Chain one",
      steps: [{ name: "emit", code: "async (steps, $) => { $.send.emit({ raw_event: { n: steps.trigger.event.n + 1 } }); }" }],
    });
    const second = await deployWorkflow(admin, {
      name: "Chain two",
      steps: [
        { name: "emit", code: "async (steps, $) => { $.send.emit({ raw_event: { doubled: steps.trigger.event.raw_event.n * 2 } }); }" },
      ],
    });
    await subscribe(admin, first.id, second.id);
    await run(admin, first.id, { n: 20 });
    const chained = await eventually("the second workflow's emit", async () => {
      const listed = await emits(admin, second.id);
      return listed.length > 0 ? listed : undefined;
    });
    expect(chained[0].event).to.deep.equal({ raw_event: { doubled: 42 } });
    // Back to the first: a cycle, stopped at the first workflow and said in its logs.
    await subscribe(admin, second.id, first.id);
    await run(admin, first.id, { n: 1 });
    const skipped = await eventually("the cycle to be logged", async () => {
      const logs = await admin.get(`/v1/workflows/${first.id}/logs`);
      return (logs.body.data as any[]).find((l) => l.lines.some((line: any) => /cycle/.test(line.message)));
    });
    expect(skipped.trigger).to.equal("subscription");
  });

  it("the owner's global error workflow receives the errors of the owner's other workflows", async () => {
    const catcher = await deployWorkflow(admin, {
      name: "Catcher",
      error_workflow: true,
      steps: [
        {
          name: "note",
          code: "async (steps, $) => { const e = steps.trigger.event; $.send.emit({ raw_event: { failed: e.original_context.workflow_id, cell: e.error.cellId } }); }",
        },
      ],
    });
    const failing = await deployWorkflow(admin, {
      name: "Fails",
      steps: [{ name: "oops", code: 'async () => { throw new Error("nope"); }' }],
    });
    await run(admin, failing.id);
    const caught = await eventually("the error workflow's emit", async () => {
      const listed = await emits(admin, catcher.id);
      return listed.length > 0 ? listed : undefined;
    });
    expect(caught[0].event.raw_event).to.deep.equal({ failed: failing.id, cell: failing.steps[0].cell_id });
    // Another user's failures never reach this owner's error workflow.
    const theirs = await deployWorkflow(other, {
      name: "Theirs fails",
      steps: [{ name: "x", code: 'async () => { throw new Error("theirs"); }' }],
    });
    await run(other, theirs.id);
    await sleep(1500);
    expect(await emits(admin, catcher.id)).to.have.length(1);
  });

  it("a timer-triggered workflow runs on its interval", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "Ticker",
      trigger: { type: "timer", interval_seconds: 1 },
      steps: [{ name: "tick", code: "async (steps, $) => { $.send.emit({ raw_event: steps.trigger.event }); }" }],
    });
    const ticks = await eventually("two ticks", async () => {
      const listed = await emits(admin, workflow.id);
      return listed.length >= 2 ? listed : undefined;
    });
    expect(ticks[0].event.raw_event).to.have.keys(["timestamp", "interval_seconds"]);
    expect(ticks[0].event.raw_event.interval_seconds).to.equal(1);
    expect((await admin.delete(`/v1/workflows/${workflow.id}`)).status).to.equal(204);
  });

  it("a cron trigger may name its IANA time zone (UTC when none is given); an unknown zone is refused", async () => {
    const step = [{ name: "tick", code: "async (steps, $) => {}" }];
    const zoned = await deployWorkflow(admin, {
      name: "Zoned",
      trigger: { type: "timer", cron: "0 9 * * *", timezone: "Europe/Paris" },
      steps: step,
    });
    expect(zoned.trigger).to.deep.equal({ type: "timer", cron: "0 9 * * *", timezone: "Europe/Paris" });
    const utc = await deployWorkflow(admin, { name: "Utc", trigger: { type: "timer", cron: "0 9 * * *" }, steps: step });
    expect(utc.trigger).to.deep.equal({ type: "timer", cron: "0 9 * * *", timezone: "UTC" });
    const bad = await admin.post("/v1/workflows", {
      definition: { name: "Bad zone", trigger: { type: "timer", cron: "0 9 * * *", timezone: "Nowhere/Land" }, steps: step },
    });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.match(/timezone must be an IANA time zone name/);
    for (const id of [zoned.id, utc.id]) expect((await admin.delete(`/v1/workflows/${id}`)).status).to.equal(204);
  });

  it("deploying the same key again is a new version of the same workflow, keeping its endpoint", async () => {
    const v1 = await deployWorkflow(
      admin,
      { name: "Versioned", trigger: "http", steps: [{ name: "a", code: "async () => 1" }] },
      "versioned.yaml",
    );
    const v2 = await deployWorkflow(
      admin,
      { name: "Versioned", trigger: "http", steps: [{ name: "b", code: "async () => 2" }] },
      "versioned.yaml",
    );
    expect(v2.id).to.equal(v1.id);
    expect([v1.version, v2.version]).to.deep.equal([1, 2]);
    expect(v2.deployment_id).to.not.equal(v1.deployment_id);
    expect(v2.trigger.endpoint_url).to.equal(v1.trigger.endpoint_url);
    expect((await run(admin, v2.id)).steps.map((s: any) => [s.name, s.return_value])).to.deep.equal([["b", 2]]);
    const listed = await admin.get("/v1/users/me/workflows?limit=100");
    expect(listed.body.data.filter((w: any) => w.key === "versioned.yaml")).to.have.length(1);
    // The operator's audit tells the workflow's history.
    const audit = server.cli("audit", v1.id);
    expect(audit.status, audit.stderr).to.equal(0);
    expect(audit.json.events.map((e: { type: string; data: { version: number } }) => [e.type, e.data.version])).to.deep.equal([
      ["WorkflowDeployed", 1],
      ["WorkflowDeployed", 2],
    ]);
  });

  it("deploys into an organization with org_id in the query (as every other create) or in the body", async () => {
    const me = (await admin.get("/v1/users/me")).body.data;
    const org = server.cli("admin", "org", "create", "--name", "Workflow Org", "--owner", me.id).json;
    const definition = { name: "Org flow", trigger: "http", steps: [{ name: "a", code: "async () => 1" }] };
    const byQuery = await admin.post(`/v1/workflows?org_id=${org.id}`, { definition, key: "org-by-query" });
    expect(byQuery.status, JSON.stringify(byQuery.body)).to.equal(200);
    const byBody = await admin.post("/v1/workflows", { definition, key: "org-by-body", org_id: org.id });
    expect(byBody.status, JSON.stringify(byBody.body)).to.equal(200);
    const orgKeys = (await admin.get(`/v1/orgs/${org.id}/workflows`)).body.data.map((w: any) => w.key).sort();
    expect(orgKeys).to.deep.equal(["org-by-body", "org-by-query"]);
    const ownKeys = (await admin.get("/v1/users/me/workflows?limit=100")).body.data.map((w: any) => w.key);
    expect(ownKeys).to.not.include("org-by-query");
    // Another user's organization is not one to act in.
    const refused = await other.post(`/v1/workflows?org_id=${org.id}`, { definition, key: "intruder" });
    expect(refused.status).to.equal(404);
  });

  it("lists the last 100 emits with cursors; large events are truncated unless expand=event", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "Many",
      steps: [
        {
          name: "burst",
          code: 'async (steps, $) => { for (let i = 0; i < 105; i++) $.send.emit({ raw_event: { i, pad: i === 104 ? "x".repeat(2000) : "" } }); }',
        },
      ],
    });
    await run(admin, workflow.id);
    const first = await admin.get(`/v1/workflows/${workflow.id}/event_summaries?limit=10`);
    expect(first.body.page_info.total_count).to.equal(100);
    expect(first.body.data).to.have.length(10);
    expect(first.body.data[0].event.$truncated).to.equal(true);
    const next = await admin.get(
      `/v1/workflows/${workflow.id}/event_summaries?limit=10&expand=event&after=${first.body.page_info.end_cursor}`,
    );
    expect(next.body.data.map((e: any) => e.event.raw_event.i)).to.deep.equal([94, 93, 92, 91, 90, 89, 88, 87, 86, 85]);
    const expanded = await admin.get(`/v1/workflows/${workflow.id}/event_summaries?limit=1&expand=event`);
    expect(expanded.body.data[0].event.raw_event.pad).to.have.length(2000);
    const all = await emits(admin, workflow.id);
    expect(all.map((e) => e.event.raw_event.i)).to.deep.equal(Array.from({ length: 100 }, (_, i) => i + 5));
  });

  it("a step's app prop runs with the credentials of a connected account it binds", async () => {
    const account = await admin.post("/v1/accounts", { app: "acme", name: "work", auth: { api_key: "k-123456" } });
    expect(account.status, JSON.stringify(account.body)).to.equal(200);
    const workflow = await deployWorkflow(admin, {
      name: "With account",
      steps: [
        {
          name: "call",
          code: `export default { name: "Acme call", version: "0.1.0", type: "action",
  props: { acme: { type: "app", app: "acme" } },
  async run() { return { key: this.acme.$auth.api_key.slice(0, 2) + "…" }; } };`,
          props: { acme: { authProvisionId: account.body.data.id } },
        },
      ],
    });
    expect(JSON.stringify(workflow)).to.not.include("k-123456");
    expect((await run(admin, workflow.id)).steps[0].return_value).to.deep.equal({ key: "k-…" });
    const theirs = await other.post("/v1/workflows", {
      definition: {
        name: "Steal",
        steps: [
          {
            name: "s",
            code: "export default { name: 'S', version: '1', type: 'action', props: { acme: { type: 'app', app: 'acme' } }, async run() { return this.acme.$auth; } };",
            props: { acme: { authProvisionId: account.body.data.id } },
          },
        ],
      },
    });
    expect(theirs.status).to.equal(404);
  });

  it("an alert prop (a note for whoever configures the action) needs no value", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "With a note",
      steps: [
        {
          name: "noted",
          code: `export default { name: "Noted", version: "0.1.0", type: "action",
  props: { note: { type: "alert", alertType: "info", content: "Counts are capped at 10." }, n: { type: "integer", max: 10 } },
  async run() { return this.n * 2; } };`,
          props: { n: 4 },
        },
      ],
    });
    expect((await run(admin, workflow.id)).steps[0].return_value).to.equal(8);
  });

  it("counts workflow runs against the owner's daily invocations", async () => {
    const created = server.cli("admin", "user", "create", "--username", "wffree", "--email", "wffree@example.com");
    const free = server.client(created.json.api_key);
    const workflow = await deployWorkflow(free, { name: "Counted", steps: [{ name: "a", code: "async () => 1" }] });
    const before = (await me(free)).daily_invocations_used as number;
    await run(free, workflow.id);
    await run(free, workflow.id);
    expect((await me(free)).daily_invocations_used).to.equal(before + 2);
  });

  it("a refused deploy saves none of its steps' code (the key of an action given as files still names what it named)", async () => {
    const key = "wf-refused-key";
    const v1 = ACTION.replace('key: "wf-test-multiply"', `key: "${key}"`);
    const saved = await admin.post("/v1/components", { component_code: v1 });
    expect(saved.status, JSON.stringify(saved.body)).to.equal(200);
    const v2 = v1.replace('version: "0.1.0"', 'version: "0.2.0"');
    const refused = await admin.post("/v1/workflows", {
      definition: {
        name: "Refused",
        steps: [
          { name: "files", files: { "multiply.mjs": v2 }, entry: "multiply.mjs", props: { value: 2 } },
          { name: "inline", code: "async (steps) => steps.files.product" },
          { name: "missing", action: "no-such-key-anywhere" },
        ],
      },
    });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
    expect(refused.body.details.map((d: any) => d.path)).to.deep.equal(["definition.steps[2].action"]);
    const byKey = await admin.get(`/v1/components/${key}`);
    expect(byKey.status).to.equal(200);
    expect(byKey.body.data.version, "the refused deploy's v2 was not saved").to.equal("0.1.0");
    // Accepted, the same definition saves the action once though two steps use it.
    const accepted = await deployWorkflow(admin, {
      name: "Accepted",
      steps: [
        { name: "one", files: { "multiply.mjs": v2 }, entry: "multiply.mjs", props: { value: 2 } },
        { name: "two", files: { "multiply.mjs": v2 }, entry: "multiply.mjs", props: { value: "{{steps.one.product}}" } },
      ],
    });
    expect((await run(admin, accepted.id)).steps.map((st: any) => st.return_value)).to.deep.equal([{ product: 4 }, { product: 8 }]);
    const now = (await admin.get(`/v1/components/${key}`)).body.data;
    expect(now.version).to.equal("0.2.0");
    const steps = (await admin.get(`/v1/workflows/${accepted.id}`)).body.data.steps as { component_id: string }[];
    expect(steps.map((st) => st.component_id)).to.deep.equal([now.id, now.id]);
    expect((await admin.get(`/v1/components/${byKey.body.data.id}`)).body.data.version, "v1 is still there by its id").to.equal("0.1.0");
  });

  it("refuses bad definitions with every problem's path, and hides other users' workflows", async () => {
    const bad = await admin.post("/v1/workflows", {
      definition: { name: "Bad", steps: [{ name: "trigger", code: "async () => 1" }, { name: "x" }, { name: "y", action: "./local.mjs" }] },
    });
    expect(bad.status).to.equal(400);
    expect(bad.body.details.map((d: any) => d.path)).to.include("definition.steps[1]");
    const yaml = await admin.post("/v1/workflows", { definition: "name: [unclosed" });
    expect(yaml.status).to.equal(400);
    expect(yaml.body.error).to.match(/YAML/);
    const notAction = await admin.post("/v1/workflows", { definition: { name: "Src", steps: [{ name: "s", code: SOURCE }] } });
    expect(notAction.status).to.equal(400);
    expect(notAction.body.error).to.match(/actions/);
    const badProp = await admin.post("/v1/workflows", {
      definition: { name: "Props", steps: [{ name: "m", component_id: multiplyId, props: { value: 1, factor: 99 } }] },
    });
    expect(badProp.status).to.equal(400);
    expect(badProp.body.details).to.deep.include({ path: "definition.steps[0].props.factor", message: "must be at most 10" });
    const badExpression = await admin.post("/v1/workflows", {
      definition: { name: "Expr", steps: [{ name: "m", component_id: multiplyId, props: { value: "{{process.env}}" } }] },
    });
    expect(badExpression.status).to.equal(400);
    const fileFile = await admin.post("/v1/workflows", { definition: { name: "File", steps: [{ name: "y", action: "./local.mjs" }] } });
    expect(fileFile.status).to.equal(400);
    expect(fileFile.body.error).to.match(/headwater workflow deploy/);

    const mine = await deployWorkflow(admin, { name: "Private", steps: [{ name: "a", code: "async () => 1" }] });
    for (const response of [
      await other.get(`/v1/workflows/${mine.id}`),
      await other.get(`/v1/workflows/${mine.id}/event_summaries`),
      await other.get(`/v1/workflows/${mine.id}/$errors/event_summaries`),
      await other.post(`/v1/workflows/${mine.id}/run`, {}),
      await other.delete(`/v1/workflows/${mine.id}`),
      await admin.get("/v1/workflows/p_doesnotexist0000"),
    ]) {
      expect(response.status).to.equal(404);
    }
    expect((await other.post(`/v1/subscriptions?emitter_id=${mine.id}&listener_id=p_doesnotexist0000`)).status).to.equal(404);
  });

  it("deleting a workflow removes it, its emits and its endpoint", async () => {
    const workflow = await deployWorkflow(admin, {
      name: "Doomed",
      trigger: "http",
      steps: [{ name: "a", code: "async (s, $) => { $.send.emit({ raw_event: 1 }); }" }],
    });
    await run(admin, workflow.id);
    expect((await admin.delete(`/v1/workflows/${workflow.id}`)).status).to.equal(204);
    expect((await admin.get(`/v1/workflows/${workflow.id}`)).status).to.equal(404);
    expect((await admin.get(`/v1/workflows/${workflow.id}/event_summaries`)).status).to.equal(404);
    expect((await fetch(workflow.trigger.endpoint_url!, { method: "POST" })).status).to.equal(404);
  });
});

describe("workflows: one time limit for the whole run (real server)", function () {
  this.timeout(60_000);
  const server = new TestServer({ env: { HEADWATER_RUN_TIMEOUT_MS: "4000" } });
  before(() => server.start());
  after(() => server.stop());

  it("steps share the run's timeout: the step that runs out of it fails with TIMEOUT", async () => {
    const admin = server.client();
    const nap = "async (steps, $) => { await new Promise((r) => setTimeout(r, 1500)); return 'rested'; }";
    const deployed = await admin.post("/v1/workflows", {
      definition: {
        name: "Sleepy",
        steps: [
          { name: "one", code: nap },
          { name: "two", code: nap },
          { name: "three", code: nap },
        ],
      },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).to.equal(200);
    // Each nap alone fits the 4 s limit; the third does not fit what the first two left (at most
    // 1 s, whatever the steps' start-up costs on a loaded machine, up to 1 s of them).
    const ran = (await admin.post(`/v1/workflows/${deployed.body.data.id}/run`, {})).body.data;
    expect(ran.ok).to.equal(false);
    expect(ran.steps.map((s: { name: string; ok: boolean }) => [s.name, s.ok])).to.deep.equal([
      ["one", true],
      ["two", true],
      ["three", false],
    ]);
    expect(ran.error).to.include({ code: "TIMEOUT", cell_id: deployed.body.data.steps[2].cell_id });
  });
});
