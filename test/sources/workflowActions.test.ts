import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TestServer, type ApiClient } from "../harness/server.js";
import { runCli } from "../cli/cliHarness.js";

// Published-format actions (our own fixtures in test/fixtures/actions/, app files imported by
// relative path) run unchanged as workflow steps, deployed from a definition file by the real
// `headwater workflow deploy`, which uploads each action with the files it imports.

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "test", "fixtures", "actions");

describe("published-format actions as workflow steps (real server, real CLI)", function () {
  this.timeout(120_000);
  const server = new TestServer();
  let admin: ApiClient;
  let dir: string;
  let env: Record<string, string>;

  before(async () => {
    await server.start();
    admin = server.client();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "hw-workflow-actions-"));
    env = {
      ...(process.env as Record<string, string>),
      HEADWATER_API_URL: server.url,
      HEADWATER_API_KEY: server.bootstrapKey,
      XDG_CONFIG_HOME: dir,
    };
  });
  after(() => server.stop());

  const deploy = (name: string, yaml: string) => {
    const file = path.join(dir, `${name}.yaml`);
    fs.writeFileSync(file, yaml);
    const result = runCli(["workflow", "deploy", file], env);
    expect(result.status, result.stderr).to.equal(0);
    return JSON.parse(result.stdout) as { id: string; trigger: { endpoint_url?: string }; steps: { name: string }[] };
  };
  const action = (relative: string) => path.join(fixtures, relative);

  it("chains propDefinitions from app files, options, defaults, string[], any, additionalProps and $.respond over HTTP", async () => {
    const workflow = deploy(
      "text-pipeline",
      `name: Text pipeline
trigger: { type: http, respond: workflow }
steps:
  - name: split
    action: ${action("textkit/actions/split-text/split-text.mjs")}
    props: { text: "{{steps.trigger.event.body.words}}", separator: ";", maxParts: 3 }
  - name: joined
    action: ${action("textkit/actions/join-list/join-list.mjs")}
    props: { items: "{{steps.split.$return_value}}", glue: "-" }
  - name: shout
    action: ${action("textkit/actions/change-case/change-case.mjs")}
    props: { text: "{{steps.joined.$return_value}}", caseStyle: title }
  - name: total
    action: ${action("datakit/actions/sum-numbers/sum-numbers.mjs")}
    props: { numbers: "{{steps.joined.lengths}}", decimals: 0 }
  - name: record
    action: ${action("forms/actions/build-record/build-record.mjs")}
    props: { recordType: contact, fieldCount: 1, email: "{{steps.trigger.event.body.email}}", field_1: "{{steps.shout.$return_value}}" }
  - name: reply
    action: ${action("webhooks/actions/reply/reply.mjs")}
    props: { status: 202, body: { record: "{{steps.record.$return_value}}", total: "{{steps.total.$return_value}}" } }
`,
    );
    expect(workflow.steps.map((s) => s.name)).to.deep.equal(["split", "joined", "shout", "total", "record", "reply"]);
    const answer = await fetch(workflow.trigger.endpoint_url!, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ words: " red; green ;blue;extra", email: "ada@example.com" }),
    });
    expect(answer.status).to.equal(202);
    expect(answer.headers.get("x-replied-by")).to.equal("headwater");
    expect(await answer.json()).to.deep.equal({
      // An expression inside an object is evaluated too: a whole-string one keeps its value's type.
      record: { type: "contact", email: "ada@example.com", vip: false, extra: ["Red Green Blue"] },
      total: 12,
    });
    const logs = await admin.get(`/v1/workflows/${workflow.id}/logs`);
    const lines = (logs.body.data[0].lines as { message: string }[]).map((l) => l.message);
    expect(lines).to.include("step split: Split into 3 parts");
    expect(lines).to.include("step record: Built a contact with 1 extra field(s)");
  });

  it("$.flow.exit from a published action ends the run; a prop out of bounds after evaluation fails its step with the step's path", async () => {
    const workflow = deploy(
      "gate",
      `name: Gate
steps:
  - name: only_lists
    action: ${action("datakit/actions/filter-or-exit/filter-or-exit.mjs")}
    props: { value: "{{steps.trigger.event.items}}", test: is a non-empty list }
  - name: sum
    action: ${action("datakit/actions/sum-numbers/sum-numbers.mjs")}
    props: { numbers: "{{steps.trigger.event.items}}", decimals: "{{steps.trigger.event.decimals}}" }
`,
    );
    const exited = (await admin.post(`/v1/workflows/${workflow.id}/run`, { event: { items: [] } })).body.data;
    expect(exited.ok).to.equal(true);
    expect(exited.exited).to.deep.equal({ reason: "the value did not pass: is a non-empty list", step: "only_lists" });
    const summed = (await admin.post(`/v1/workflows/${workflow.id}/run`, { event: { items: [1.25, "2.5"], decimals: 1 } })).body.data;
    expect(summed.steps.map((s: { return_value: unknown }) => s.return_value)).to.deep.equal([[1.25, "2.5"], 3.8]);
    const bad = (await admin.post(`/v1/workflows/${workflow.id}/run`, { event: { items: [1], decimals: 9 } })).body.data;
    expect(bad.ok).to.equal(false);
    expect(bad.error).to.include({ code: "CONFIGURATION_ERROR" });
    expect(bad.error.message).to.match(/steps\[1\]\.props\.decimals/);
    const errors = await admin.get(`/v1/workflows/${workflow.id}/$errors/event_summaries?expand=event`);
    expect(errors.body.data[0].event.error.code).to.equal("CONFIGURATION_ERROR");
  });
});
